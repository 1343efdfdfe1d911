"""The Dash app shell: navbar, page container, and the API client pages read through.

`workers/serve.py` mounts `create_dash_app(api_url).server` at `/` inside the API app;
the pages in `dashboard/pages` then fetch everything from `api_url` over HTTP.

Public surface: `create_dash_app`.
"""

from __future__ import annotations

from pathlib import Path

import dash
from dash import dcc, html

from dashboard.api_client import ApiClient, install_client

__all__ = ["create_dash_app"]

HERE = Path(__file__).resolve().parent
PAGES_DIR = HERE / "pages"
ASSETS_DIR = HERE / "assets"
API_DOCS_PATH = "/docs"


def _navbar() -> html.Header:
    """Links to every page without path variables, plus the API's own docs."""
    pages = [p for p in dash.page_registry.values() if not p.get("path_template")]
    links = [
        dcc.Link(p["name"], href=p["relative_path"], className="nav-link")
        for p in sorted(pages, key=lambda p: p.get("order") or 0)
    ]
    docs = html.A("API docs", href=API_DOCS_PATH, className="nav-link", target="_blank")
    return html.Header(
        html.Nav(
            [
                dcc.Link("perfdash", href="/", className="brand"),
                html.Div([*links, docs], className="nav-links"),
            ],
            className="nav-inner",
        ),
        className="navbar",
    )


def create_dash_app(api_url: str) -> dash.Dash:
    """Build the app; nothing is fetched until a page is visited."""
    app = dash.Dash(
        "dashboard",
        use_pages=True,
        pages_folder=str(PAGES_DIR),
        assets_folder=str(ASSETS_DIR),
        title="perfdash",
        update_title="",
        eager_loading=True,  # plotly.js comes with the first bundles, not after the layout
        requests_pathname_prefix="/",
    )
    install_client(app.server, ApiClient(api_url))
    app.layout = html.Div(
        [_navbar(), html.Main(dash.page_container, className="container")], className="shell"
    )
    return app

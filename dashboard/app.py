"""The Dash app shell: navbar, page container, and the API client pages read through.

`workers/cli/serve.py` mounts `create_dash_app(api_url).server` at `/` inside the API app;
the pages in `dashboard/pages` then fetch everything from `api_url` over HTTP. The shell
is built per page load, so the navbar can show who is signed in (`GET /api/v1/me`).

Public surface: `create_dash_app`.
"""

from __future__ import annotations

from pathlib import Path

import dash
import flask
from dash import dcc, html
from dash.development.base_component import Component

from dashboard.api.client import ApiClient, ApiError, current_client, install_client
from dashboard.api.me import Me, get_me

__all__ = ["create_dash_app"]

HERE = Path(__file__).resolve().parent
PAGES_DIR = HERE / "pages"
ASSETS_DIR = HERE / "assets"
API_DOCS_PATH = "/docs"


def _who() -> Me | None:
    """The signed-in user while serving a page load; None otherwise or if the API is down."""
    if not flask.has_request_context():
        return None
    try:
        return get_me(current_client())
    except ApiError:
        return None


def _user_box(me: Me | None) -> html.Div | None:
    """Who is signed in and their role; with AUTH=password a sign-out button (a plain form
    POST to /logout carrying the session's CSRF token)."""
    if me is None or me["kind"] != "user":
        return None
    parts: list[Component] = [
        html.Span(me["name"], className="nav-user-name"),
        html.Span(me["role"], className="nav-user-role"),
    ]
    if me["auth"] == "password":
        parts.append(
            html.Form(
                [
                    dcc.Input(type="hidden", name="csrf_token", value=me["csrf_token"]),
                    html.Button("Log out", type="submit", className="nav-logout"),
                ],
                action="/logout",
                method="POST",
                className="nav-logout-form",
            )
        )
    return html.Div(parts, className="nav-user")


def _navbar(me: Me | None = None) -> html.Header:
    """Links to every page without path variables, the API's own docs, and the user."""
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
                _user_box(me),
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
        # The timeline renderer and the upload area are sets of ES modules: loaded as
        # modules, not as classic scripts the way Dash includes every other file under assets/.
        assets_path_ignore=["^timeline$", "^upload$"],
        external_scripts=[
            {"src": f"/assets/{module}/main.js", "type": "module"}
            for module in ("timeline", "upload")
        ],
    )
    install_client(app.server, ApiClient(api_url))
    # `/traces` is the old address of the list at `/`. Registered here on this app's own
    # server, not with `register_page(redirect_from=...)`, which adds it to whichever app
    # `dash.get_app()` names: in a process that builds a second app (tests), the first.
    app.server.add_url_rule("/traces", "traces_redirect", lambda: flask.redirect("/", 301))
    app.layout = _shell
    return app


def _shell() -> html.Div:
    """The page frame, built on each page load (not on navigation within the app)."""
    return html.Div(
        [_navbar(_who()), html.Main(dash.page_container, className="container")],
        className="shell",
    )

"""The Dash shell builds, registers its pages, and degrades to a message when the API is down."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator

import dash
import pytest

from dashboard.app import ASSETS_DIR, create_dash_app


@pytest.fixture(scope="module")
def app() -> Iterator[dash.Dash]:
    """One app per process: Dash pages register themselves in module-global state."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield create_dash_app(api_url=f"http://127.0.0.1:{port}")


def test_pages_are_registered(app: dash.Dash) -> None:
    paths = {p.get("path_template") or p["path"] for p in dash.page_registry.values()}
    assert {"/", "/traces/<trace_id>"} <= paths


def test_shell_has_navbar_links(app: dash.Dash) -> None:
    flask_client = app.server.test_client()
    layout = json.dumps(flask_client.get("/_dash-layout").get_json())
    assert '"perfdash"' in layout
    assert '"Traces"' in layout
    assert '"/docs"' in layout
    assert flask_client.get("/").status_code == 200
    assert flask_client.get("/traces").status_code in (301, 302, 308)


def test_pages_say_when_the_api_is_unreachable(app: dash.Dash) -> None:
    traces = sys.modules["dashboard.pages.traces"]
    detail = sys.modules["dashboard.pages.trace_detail"]
    with app.server.test_request_context("/"):
        assert "Could not load traces" in str(traces.layout())
        page = detail.layout(trace_id="f" * 32)
    assert "Could not load the trace" in str(page)
    poll = next(c for c in page.children if getattr(c, "id", None) == detail.TRACE_DETAIL_POLL)
    assert poll.disabled is False  # keeps polling, the API may come back


def test_no_trace_file_goes_through_the_page_server(app: dash.Dash) -> None:
    """Issue 25: a file dropped on the traces page went to a server callback as base64
    inside JSON, held whole in the page server's memory; the browser now sends it to the
    API's streaming upload route itself (assets/upload/, an ES module)."""
    client = app.server.test_client()
    deps = client.get("/_dash-dependencies").get_json()
    assert not [d for d in deps if any(i["id"] == "traces-upload" for i in d["inputs"])]
    assert '<script src="/assets/upload/main.js" type="module">' in client.get("/").text
    sender = (ASSETS_DIR / "upload" / "send.js").read_text()
    assert 'xhr.open("POST", `${API}/traces`)' in sender and "X-CSRFToken" in sender

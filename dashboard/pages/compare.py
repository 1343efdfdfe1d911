"""`/compare?a=<id>&b=<id>[&tokens_per_step=N]`: trace A against trace B.

Pick two traces; the URL carries the choice, so a comparison is a link. Shows the
headline deltas, the per-kernel deltas sorted by absolute impact, new and gone kernels,
and the Markdown report with a copy button.

Public surface: the Dash page (path `/compare`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.development.base_component import Component

from dashboard.api import views
from dashboard.api.client import ApiError, current_client
from dashboard.api.traces import list_traces
from dashboard.components import notice
from dashboard.components.compare_panel import compare_panel

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/compare", title="Compare · perfdash", name="Compare", order=5
)

COMPARE_A = "compare-a"
COMPARE_B = "compare-b"
COMPARE_TOKENS = "compare-tokens"
COMPARE_GO = "compare-go"
COMPARE_URL = "compare-url"
COMPARE_BODY = "compare-body"


def _options() -> list[dict[str, str]]:
    try:
        listed = list_traces(current_client(), limit=200)
    except ApiError:
        return []
    ready = [t for t in listed["items"] if t["status"] == "ready"]
    return [{"label": f"{t['name']} · {t['created_at'][:16]}", "value": t["id"]} for t in ready]


def _tokens(value: str | None) -> float | None:
    try:
        tokens = float(value) if value else None
    except ValueError:
        return None
    return tokens if tokens and tokens > 0 else None


def _body(a: str | None, b: str | None, tokens: float | None) -> Component:
    if not a or not b:
        return html.Div("Pick a trace A (before) and a trace B (after).", className="empty-state")
    try:
        result = views.get_compare(current_client(), a, b, tokens)
    except ApiError as e:
        return notice(f"Could not compare: {e.detail}", "error")
    return compare_panel(result, "compare")


def _pickers(a: str | None, b: str | None, tokens: str | None) -> html.Div:
    options = _options()
    return html.Div(
        [
            html.Div([html.Label("A (before)", className="control-label"),
                      dcc.Dropdown(id=COMPARE_A, options=options, value=a)]),
            html.Div([html.Label("B (after)", className="control-label"),
                      dcc.Dropdown(id=COMPARE_B, options=options, value=b)]),
            html.Div([html.Label("Tokens per step (optional)", className="control-label"),
                      dcc.Input(id=COMPARE_TOKENS, type="number", min=1, value=tokens,
                                debounce=True, className="control-search")]),
        ],
        className="compare-pickers",
    )  # fmt: skip


def layout(
    a: str | None = None, b: str | None = None, tokens_per_step: str | None = None, **_q: str
) -> html.Div:
    """Pickers and, when both traces are chosen, the comparison."""
    return html.Div(
        [
            html.H1("Compare traces", className="page-title"),
            dcc.Location(id=COMPARE_URL, refresh="callback-nav"),
            html.Section(_pickers(a, b, tokens_per_step), className="card"),
            dcc.Loading(
                html.Div(_body(a, b, _tokens(tokens_per_step)), id=COMPARE_BODY),
                type="circle",
                delay_show=150,
            ),
        ]
    )


@callback(
    Output(COMPARE_URL, "href"),
    Input(COMPARE_A, "value"),
    Input(COMPARE_B, "value"),
    Input(COMPARE_TOKENS, "value"),
    State(COMPARE_URL, "search"),
    prevent_initial_call=True,
)
def choose(a: str | None, b: str | None, tokens: Any, search: str | None) -> str:
    """Write the choice into the URL; the page renders the comparison from it."""
    params = {k: str(v) for k, v in (("a", a), ("b", b), ("tokens_per_step", tokens)) if v}
    href = f"/compare?{urlencode(params)}"
    if f"?{urlencode(params)}" == (search or "?"):
        raise dash.exceptions.PreventUpdate
    return href

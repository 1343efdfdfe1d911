"""`/` (and `/traces`): upload a trace, and watch every trace move from queued to ready.

The browser sends the file straight to the API (`assets/upload.js`), which streams it to
disk and queues the parsing in Celery; this page shows the API's answer and polls the
list with `dcc.Interval`, so no file and no work ever sit in the dashboard process.
"""

from __future__ import annotations

from typing import Any, cast

import dash
from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, dcc, html

from dashboard.api.client import ApiError, current_client, detail_text
from dashboard.api.traces import TraceAccepted, list_traces
from dashboard.components import notice, traces_table

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/", title="Traces · perfdash", name="Traces", order=0
)

TRACES_UPLOAD = "traces-upload"
TRACES_UPLOAD_STATUS = "traces-upload-status"
TRACES_UPLOAD_RESULT = "traces-upload-result"
TRACES_TABLE = "traces-table"
TRACES_POLL = "traces-poll"
POLL_MS = 1500
LIST_LIMIT = 100


def _table() -> html.Div:
    """The current list from the API, or why it could not be read."""
    try:
        traces = list_traces(current_client(), limit=LIST_LIMIT)
    except ApiError as e:
        return html.Div(notice(f"Could not load traces: {e.detail}", "error"))
    return traces_table(traces["items"], total=traces["count"])


def _upload_box() -> dcc.Upload:
    return dcc.Upload(
        id=TRACES_UPLOAD,
        multiple=False,
        className="upload-box",
        children=html.Div(
            [
                html.Div(
                    ["Drop a trace file here, or ", html.Span("choose a file", className="link")],
                    className="upload-lead",
                ),
                html.Div(
                    "torch.profiler JSON(.gz), Nsight Systems sqlite, Nsight Compute CSV, rocprof "
                    "v1/v2/v3, Instruments xctrace export XML, or a .zip/.tar.gz of rank files "
                    "or of one tool's output; parsing runs in the background.",
                    className="muted small",
                ),
            ]
        ),
    )


def layout(**_query: str) -> html.Div:
    """Fresh on every visit: the list is read when the page is opened, then polled."""
    return html.Div(
        [
            html.H1("Traces", className="page-title"),
            html.Section(
                [
                    _upload_box(),
                    dcc.Loading(
                        [
                            html.Div(id=TRACES_UPLOAD_STATUS, className="upload-status"),
                            dcc.Store(id=TRACES_UPLOAD_RESULT),  # pending while the file goes
                        ],
                        type="dot",
                        delay_show=150,
                    ),
                ],
                className="card",
            ),
            html.Section(
                [html.H2("All traces"), html.Div(_table(), id=TRACES_TABLE)], className="card"
            ),
            dcc.Interval(id=TRACES_POLL, interval=POLL_MS),
        ]
    )


def _accepted_notice(name: str, accepted: TraceAccepted) -> html.Div:
    """Say what the API did with the file, with a link to the trace either way."""
    link = dcc.Link("Open the trace", href=f"/traces/{accepted['id']}")
    if accepted["duplicate"]:
        return notice([f"{name} was uploaded before; nothing new was stored. ", link], "info")
    queued = accepted["status"] == "queued"
    text = f"Uploaded {name}" + (" and queued it for parsing. " if queued else ". ")
    return notice([text, link], "success")


# The browser posts the file to the API and leaves the answer in the store; clearing the
# contents lets the same file be picked again.
clientside_callback(
    ClientsideFunction(namespace="perfdash_traces", function_name="upload"),
    Output(TRACES_UPLOAD_RESULT, "data"),
    Output(TRACES_UPLOAD, "contents"),
    Input(TRACES_UPLOAD, "contents"),
    State(TRACES_UPLOAD, "filename"),
    prevent_initial_call=True,
)


@callback(
    Output(TRACES_UPLOAD_STATUS, "children"),
    Input(TRACES_UPLOAD_RESULT, "data"),
    prevent_initial_call=True,
)
def upload_result(result: dict[str, Any] | None) -> Any:
    """Say what the API did with the file the browser sent it (assets/upload.js)."""
    if not result:
        raise dash.exceptions.PreventUpdate
    name, status, body = str(result.get("name")), result.get("status"), result.get("body")
    if status == 202 and isinstance(body, dict) and "id" in body:
        return _accepted_notice(name, cast(TraceAccepted, body))
    fallback = str(result.get("detail") or f"the API answered {status}")
    return notice(f"Upload of {name} failed: {detail_text(body, fallback)}", "error")


@callback(
    Output(TRACES_TABLE, "children"),
    Input(TRACES_POLL, "n_intervals"),
    prevent_initial_call=True,
)
def refresh(_n: int | None) -> html.Div:
    """Re-read the list, so status changes made by the workers show up live."""
    return _table()

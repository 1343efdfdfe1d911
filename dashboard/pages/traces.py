"""`/` (and `/traces`): upload a trace, and watch every trace move from queued to ready.

The upload goes to the API, which queues the parsing in Celery; this page only polls
the list with `dcc.Interval`, so no work runs in the dashboard process.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html

from dashboard.api_client import ApiError, TraceAccepted, current_client
from dashboard.components import notice, traces_table

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/", redirect_from=["/traces"], title="Traces · perfdash", name="Traces", order=0
)

TRACES_UPLOAD = "traces-upload"
TRACES_UPLOAD_STATUS = "traces-upload-status"
TRACES_TABLE = "traces-table"
TRACES_POLL = "traces-poll"
POLL_MS = 1500
LIST_LIMIT = 100


def _table() -> html.Div:
    """The current list from the API, or why it could not be read."""
    try:
        traces = current_client().list_traces(limit=LIST_LIMIT)
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
                    "v1/v2/v3, or a .zip/.tar.gz of rank files; parsing runs in the background.",
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
                        html.Div(id=TRACES_UPLOAD_STATUS, className="upload-status"),
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


def _decode(contents: str) -> bytes:
    """`dcc.Upload` hands over a data URL; the payload after the comma is base64."""
    return base64.b64decode(contents.partition(",")[2], validate=True)


def _accepted_notice(name: str, accepted: TraceAccepted) -> html.Div:
    """Say what the API did with the file, with a link to the trace either way."""
    link = dcc.Link("Open the trace", href=f"/traces/{accepted['id']}")
    if accepted["duplicate"]:
        return notice([f"{name} was uploaded before; nothing new was stored. ", link], "info")
    queued = accepted["status"] == "queued"
    text = f"Uploaded {name}" + (" and queued it for parsing. " if queued else ". ")
    return notice([text, link], "success")


@callback(
    Output(TRACES_UPLOAD_STATUS, "children"),
    Output(TRACES_UPLOAD, "contents"),
    Input(TRACES_UPLOAD, "contents"),
    State(TRACES_UPLOAD, "filename"),
    prevent_initial_call=True,
)
def upload(contents: str | None, filename: str | None) -> tuple[Any, None]:
    """Post the chosen file to the API and say what happened; clear it so a re-pick fires."""
    if contents is None:
        raise dash.exceptions.PreventUpdate
    name = filename or "trace"
    try:
        accepted = current_client().upload_trace(name, _decode(contents))
    except (ApiError, binascii.Error, ValueError) as e:
        detail = e.detail if isinstance(e, ApiError) else "the browser sent unreadable data"
        return notice(f"Upload of {name} failed: {detail}", "error"), None
    return _accepted_notice(name, accepted), None


@callback(
    Output(TRACES_TABLE, "children"),
    Input(TRACES_POLL, "n_intervals"),
    prevent_initial_call=True,
)
def refresh(_n: int | None) -> html.Div:
    """Re-read the list, so status changes made by the workers show up live."""
    return _table()

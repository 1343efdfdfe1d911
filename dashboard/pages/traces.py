"""`/` (and `/traces`): upload traces, and watch every trace move from queued to ready.

The upload area is a browser module (`assets/upload/main.js`) mounted into an empty
`TRACES_UPLOAD` div: it sends the files straight to the API, which streams them to disk
and queues the parsing in Celery, and shows each file's progress and answer. This page
polls the list with `dcc.Interval`, so no file and no work ever sit in the dashboard process.
"""

from __future__ import annotations

import dash
from dash import Input, Output, callback, dcc, html

from dashboard.api.client import ApiError, current_client
from dashboard.api.traces import list_traces
from dashboard.components import notice, traces_table

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/", title="Traces · perfdash", name="Traces", order=0
)

TRACES_UPLOAD = "traces-upload"
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


def layout(**_query: str) -> html.Div:
    """Fresh on every visit: the list is read when the page is opened, then polled."""
    return html.Div(
        [
            html.H1("Traces", className="page-title"),
            html.Section(
                [html.H2("Upload"), html.Div(id=TRACES_UPLOAD, className="upload-area")],
                className="card",
            ),
            html.Section(
                [html.H2("All traces"), html.Div(_table(), id=TRACES_TABLE)], className="card"
            ),
            dcc.Interval(id=TRACES_POLL, interval=POLL_MS),
        ]
    )


@callback(
    Output(TRACES_TABLE, "children"),
    Input(TRACES_POLL, "n_intervals"),
    prevent_initial_call=True,
)
def refresh(_n: int | None) -> html.Div:
    """Re-read the list, so status changes made by the workers show up live."""
    return _table()

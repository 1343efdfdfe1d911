"""`/` (and `/traces`): upload traces, and find, sort, edit, compare and delete them.

The upload area is a browser module (`assets/upload/main.js`) mounted into an empty
`TRACES_UPLOAD` div: it sends the files straight to the API, which streams them to disk
and queues the parsing in Celery, and shows each file's progress and answer. The list below
(`_traces_list`) pages, filters and sorts on the server and polls for status changes, so
no file and no work ever sit in the dashboard process.
"""

from __future__ import annotations

import dash
from dash import html

from dashboard.pages import _traces_list as traces_list

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/", title="Traces · perfdash", name="Traces", order=0
)

TRACES_UPLOAD = "traces-upload"


def layout(**query: str) -> html.Div:
    """Fresh on every visit: the list is read for the URL's query, then polled."""
    return html.Div(
        [
            html.H1("Traces", className="page-title"),
            html.Section(
                [html.H2("Upload"), html.Div(id=TRACES_UPLOAD, className="upload-area")],
                className="card",
            ),
            traces_list.section(query),
        ]
    )

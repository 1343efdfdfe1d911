"""The traces list's filter bar, its toolbar (Compare, Delete) and its two dialogs: the
delete confirmation that names every trace, and the editor of a trace's name, tags and note.

Dialogs are plain elements shown and hidden by a class, so their text is the page's own
(testable and visible in a screenshot, unlike `window.confirm`); every name in them is
text, never markup.

Public surface: `filter_bar`, `toolbar`, `delete_dialog`, `edit_dialog`, `delete_question`,
the component ids (`FILTER_*`, `FILTERS`, `SELECT_ALL`, `COMPARE`, `DELETE`, `DELETE_*`,
`EDIT_*`), `STATUSES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html

from dashboard.api.traces import TraceFacets, TraceQuery

FILTER_PROJECT = "traces-filter-project"
FILTER_FORMAT = "traces-filter-format"
FILTER_STATUS = "traces-filter-status"
FILTER_TAG = "traces-filter-tag"
FILTER_DATES = "traces-filter-dates"
FILTER_SEARCH = "traces-search"
FILTER_CLEAR = "traces-filter-clear"
FILTERS = (FILTER_PROJECT, FILTER_FORMAT, FILTER_STATUS, FILTER_TAG, FILTER_SEARCH)
SELECT_ALL = "traces-select-all"  # outside the table, so it exists when the list is empty
COMPARE = "traces-compare"
DELETE = "traces-delete"
SELECTED = "traces-selected-count"
DELETE_DIALOG = "traces-delete-dialog"
DELETE_NAMES = "traces-delete-names"
DELETE_CONFIRM = "traces-delete-confirm"
DELETE_CANCEL = "traces-delete-cancel"
DELETE_ERROR = "traces-delete-error"
EDIT_DIALOG = "traces-edit-dialog"
EDIT_TRACE = "traces-edit-trace"
EDIT_NAME = "traces-edit-name"
EDIT_TAGS = "traces-edit-tags"
EDIT_NOTE = "traces-edit-note"
EDIT_SAVE = "traces-edit-save"
EDIT_CANCEL = "traces-edit-cancel"
EDIT_ERROR = "traces-edit-error"
STATUSES = ("queued", "processing", "ready", "failed")
HIDDEN, SHOWN = "dialog-backdrop", "dialog-backdrop dialog-open"
_MODAL: dict[str, Any] = {"aria-modal": "true"}


def _picker(id_: str, label: str, values: Sequence[str], value: str) -> dcc.Dropdown:
    options = [
        {"label": v, "value": v} for v in dict.fromkeys([*values, *([value] if value else [])])
    ]
    return dcc.Dropdown(
        id=id_, options=options, value=value or None, placeholder=label, className="filter-select"
    )


def filter_bar(query: TraceQuery, facets: TraceFacets) -> html.Div:
    """Search, the pickers (projects, formats and tags the API has now) and the date range."""
    return html.Div(
        [
            dcc.Input(
                id=FILTER_SEARCH,
                type="search",
                value=query.q,
                debounce=True,
                placeholder="Search names (Enter)…",
                className="control-search",
            ),
            _picker(FILTER_PROJECT, "Project", facets["projects"], query.project),
            _picker(FILTER_FORMAT, "Format", facets["formats"], query.format),
            _picker(FILTER_STATUS, "Status", STATUSES, query.status),
            _picker(FILTER_TAG, "Tag", facets["tags"], query.tag),
            dcc.DatePickerRange(
                id=FILTER_DATES,
                start_date=query.created_from or None,
                end_date=query.created_to or None,
                display_format="YYYY-MM-DD",
                start_date_placeholder_text="Created from",
                end_date_placeholder_text="to (incl.)",
                clearable=True,
                className="filter-dates",
            ),
            html.Button(
                "Clear", id=FILTER_CLEAR, className="link-button", disabled=not query.filtered()
            ),
        ],
        className="controls traces-filters",
    )


def toolbar() -> html.Div:
    """Actions on the checked rows; the page enables them as rows are checked."""
    return html.Div(
        [
            dcc.Checklist(
                id=SELECT_ALL,
                options=[{"label": "All on this page", "value": "all"}],
                value=[],
                className="select-all",
            ),
            html.Span("None selected", id=SELECTED, className="muted"),
            html.Button(
                "Compare",
                id=COMPARE,
                className="button",
                disabled=True,
                title="Check exactly two traces to compare them",
            ),
            html.Button("Delete", id=DELETE, className="button button-danger", disabled=True),
        ],
        className="traces-toolbar",
    )


def delete_question(names: Sequence[str]) -> list[Any]:
    """The dialog's text: how many, and each name (all of them, scrolling if many)."""
    one = len(names) == 1
    what = "this trace? Its" if one else f"these {len(names)} traces? Their"
    return [
        html.P(f"Delete {what} events, stats and stored files go too; this cannot be undone."),
        html.Ul([html.Li(n) for n in names], className="delete-names"),
    ]


def delete_dialog() -> html.Div:
    return html.Div(
        html.Div(
            [
                html.H3("Delete traces"),
                html.Div(id=DELETE_NAMES),
                html.Div(id=DELETE_ERROR),
                html.Div(
                    [
                        html.Button(
                            "Cancel", id=DELETE_CANCEL, className="button button-secondary"
                        ),
                        html.Button("Delete", id=DELETE_CONFIRM, className="button button-danger"),
                    ],
                    className="dialog-actions",
                ),
            ],
            className="dialog",
            role="dialog",
            **_MODAL,
        ),
        id=DELETE_DIALOG,
        className=HIDDEN,
    )


def edit_dialog() -> html.Div:
    """Name, tags (comma-separated) and note of the trace whose Edit button was clicked."""
    return html.Div(
        html.Div(
            [
                html.H3("Edit trace"),
                dcc.Store(id=EDIT_TRACE),
                html.Label(
                    ["Name", dcc.Input(id=EDIT_NAME, type="text", maxLength=512)],
                    className="dialog-field",
                ),
                html.Label(
                    [
                        "Tags, comma-separated",
                        dcc.Input(id=EDIT_TAGS, type="text", placeholder="h200, fp8, baseline"),
                    ],
                    className="dialog-field",
                ),
                html.Label(
                    ["Note", dcc.Textarea(id=EDIT_NOTE, maxLength=4000, rows=4)],
                    className="dialog-field",
                ),
                html.Div(id=EDIT_ERROR),
                html.Div(
                    [
                        html.Button("Cancel", id=EDIT_CANCEL, className="button button-secondary"),
                        html.Button("Save", id=EDIT_SAVE, className="button"),
                    ],
                    className="dialog-actions",
                ),
            ],
            className="dialog",
            role="dialog",
            **_MODAL,
        ),
        id=EDIT_DIALOG,
        className=HIDDEN,
    )

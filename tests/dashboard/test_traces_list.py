"""The traces list's pure parts: its URL state, the API parameters it sends, and how a
long error is cut to one line."""

from __future__ import annotations

from typing import Any

import pytest
from dash import html

from dashboard.api.traces import TraceQuery
from dashboard.components.traces_controls import delete_question
from dashboard.components.traces_table import first_line, list_href, traces_table
from tests.dashboard.test_components import _find, _texts, _trace


def test_url_round_trip_keeps_every_field_and_counts_pages_from_one() -> None:
    url = {"project": "llm", "tag": "fp8", "q": "50%_", "status": "failed", "sort": "size",
           "order": "asc", "page": "3", "created_from": "2026-01-02", "format": "nsys"}  # fmt: skip
    query = TraceQuery.from_url(url)
    assert query.page == 2
    assert query.url_query() == url
    assert list_href(TraceQuery()) == "/"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ({"sort": "drop table", "order": "sideways", "page": "-4"}, TraceQuery()),
        ({"page": "x"}, TraceQuery()),
        ({"page": "1", "unknown": "1"}, TraceQuery()),
    ],
)
def test_bad_url_values_fall_back_to_the_defaults(url: dict[str, Any], expected: Any) -> None:
    assert TraceQuery.from_url(url) == expected


def test_params_page_in_fifties_and_make_the_picked_end_day_inclusive() -> None:
    params = TraceQuery(tag="fp8", created_to="2026-01-31", page=2).params()
    assert params == {"tag": "fp8", "created_to": "2026-02-01", "sort": "created",
                      "order": "desc", "limit": 50, "offset": 100}  # fmt: skip


@pytest.mark.parametrize(
    ("error", "line", "more"),
    [
        ("short", "short", False),
        ("first\nsecond", "first", True),
        ("x" * 200, "x" * 89 + "…", True),
        ("  \nfirst after blank", "first after blank", False),
    ],
)
def test_first_line_cuts_long_errors(error: str, line: str, more: bool) -> None:
    assert first_line(error) == (line, more)


def test_long_error_is_one_summary_line_with_the_full_text_on_expand() -> None:
    error = "ParseError: bad JSON at byte 3\n" + "\n".join(f"  frame {i}" for i in range(40))
    table = traces_table([_trace(status="failed", error=error, event_counts={})])
    (details,) = _find(table, html.Details)
    (summary,) = _find(details, html.Summary)
    assert _texts(summary)[0] == "ParseError: bad JSON at byte 3"
    (full,) = _find(details, html.Pre)
    assert full.children == error


def test_filtered_empty_list_says_so_and_the_delete_question_names_each_trace() -> None:
    assert "No traces match" in " ".join(_texts(traces_table([], 0, TraceQuery(tag="x"))))
    texts = _texts(html.Div(delete_question(["<b>a</b>", "b"])))
    assert "Delete these 2 traces?" in texts[0] and texts[1:] == ["<b>a</b>", "b"]

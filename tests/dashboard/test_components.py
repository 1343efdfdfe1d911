"""Layout builders render API dicts the way the pages promise, without a server."""

from __future__ import annotations

from typing import Any, cast

from dash import html
from dash.development.base_component import Component

from dashboard.api.traces import KernelStat, Trace
from dashboard.components import kernel_table, status_badge, trace_summary, traces_table


def _trace(**overrides: Any) -> Trace:
    trace: dict[str, Any] = {
        "id": "a" * 32,
        "name": "step.pt.trace.json.gz",
        "project": "default",
        "status": "ready",
        "error": None,
        "format": "torch_profiler",
        "blob_sha256": "0" * 64,
        "size_bytes": 15_341,
        "event_counts": {"kernel": 51, "cpu_op": 183},
        "devices": [{"index": 0, "name": "NVIDIA H200"}],
        "meta": {},
        "skipped_events": 0,
        "warnings": [],
        "duration_ns": 6_407_439,
        "created_at": "2026-11-29T15:38:18.049234",
        "updated_at": "2026-11-29T15:38:18.747606",
    }
    return cast(Trace, trace | overrides)


def _texts(component: Any) -> list[str]:
    """Every string in a component tree, depth first."""
    if isinstance(component, str):
        return [component]
    if isinstance(component, (list, tuple)):
        return [t for c in component for t in _texts(c)]
    if isinstance(component, Component):
        return _texts(getattr(component, "children", None))
    return []


def _prop(component: Component, name: str) -> Any:
    """A Dash prop; props are set dynamically, so mypy cannot see them as attributes."""
    return getattr(component, name)


def _find(component: Any, cls: type[Component]) -> list[Any]:
    found = [component] if isinstance(component, cls) else []
    children = getattr(component, "children", None)
    if isinstance(children, (list, tuple)):
        return found + [f for c in children for f in _find(c, cls)]
    if isinstance(children, Component):
        return found + _find(children, cls)
    return found


def test_status_badge_class_per_status() -> None:
    assert _prop(status_badge("ready"), "className") == "badge badge-ready"
    assert "badge-pulse" in _prop(status_badge("processing"), "className")


def test_traces_table_row_shows_readable_units_and_links() -> None:
    table = traces_table([_trace()], total=1)
    (row,) = _find(table, html.Tr)[1:]
    texts = _texts(row)
    assert "step.pt.trace.json.gz" in texts
    assert {"15.3 KB", "234", "6.41 ms", "2026-11-29 15:38"} <= set(texts)
    assert getattr(row, "data-status") == "ready"


def test_failed_trace_row_shows_its_error() -> None:
    trace = _trace(status="failed", error="not a trace: bad JSON at byte 3", event_counts={})
    texts = _texts(traces_table([trace]))
    assert "failed" in texts
    assert "not a trace: bad JSON at byte 3" in texts


def test_empty_list_says_so() -> None:
    assert "No traces yet" in " ".join(_texts(traces_table([])))


def test_more_traces_than_shown_are_counted() -> None:
    texts = _texts(traces_table([_trace()], total=120))
    assert {"Showing 1\u20131 of 120.", "Page 1 of 3"} <= set(texts)


def test_kernel_table_short_name_with_full_name_tooltip() -> None:
    name = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(int)"
    stat = KernelStat(
        name=name, count=6, total_ns=29_538, mean_ns=4_923, min_ns=4_800, max_ns=5_060, pct=15.4
    )
    table = kernel_table([stat], table_id="t")
    cell = next(td for td in _find(table, html.Td) if td.className == "kernel-name")
    assert cell.children == "reduce_kernel<ReduceOp, …>"
    assert cell.title == name
    assert {"29.5 µs", "4.92 µs", "4.80 µs", "5.06 µs", "15.4%"} <= set(_texts(table))


def test_summary_leads_with_the_error_of_a_failed_trace() -> None:
    summary = trace_summary(_trace(status="failed", error="boom"), "trace-detail")
    texts = _texts(summary)
    assert "Ingest failed: boom" in texts
    assert texts.index("Ingest failed: boom") < texts.index("Format")


def test_summary_facts() -> None:
    texts = _texts(trace_summary(_trace(), "trace-detail"))
    assert {"GPU 0: NVIDIA H200", "6.41 ms", "234", "15.3 KB", "torch_profiler"} <= set(texts)

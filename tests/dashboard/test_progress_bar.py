"""The ingest progress bar of a processing trace."""

from __future__ import annotations

from typing import Any

from dashboard.components.status_badge import progress_bar
from dashboard.components.traces_table import traces_table


def _texts(component: Any) -> list[str]:
    out: list[str] = []
    children = getattr(component, "children", None)
    if isinstance(children, str):
        out.append(children)
    elif isinstance(children, list | tuple):
        for c in children:
            out.extend(_texts(c) if not isinstance(c, str) else [c])
    elif children is not None:
        out.extend(_texts(children))
    return out


def test_no_report_yet_means_no_bar() -> None:
    assert progress_bar(None) is None
    assert progress_bar({"bytes_done": 0, "bytes_total": 0, "events": 0}) is None


def test_bar_width_and_label_follow_the_report() -> None:
    bar = progress_bar(
        {"bytes_done": 25_000_000, "bytes_total": 100_000_000, "events": 41_000, "fraction": 0.25}
    )
    assert bar is not None
    track = bar.children[0]
    assert track.children.style == {"width": "25.0%"}
    assert "25% · 25.0 of 100.0 MB · 41,000 events" in _texts(bar)


def test_processing_row_in_the_table_carries_the_bar() -> None:
    trace: dict[str, Any] = {
        "id": "t1", "name": "big.json.gz", "project": "p", "status": "processing",
        "error": None, "format": None, "blob_sha256": "x", "size_bytes": 10, "event_counts": {},
        "devices": [], "meta": {}, "skipped_events": 0, "warnings": [], "duration_ns": None,
        "created_at": "2026-11-30T00:00:00Z", "updated_at": "2026-11-30T00:00:00Z",
        "progress": {"bytes_done": 5, "bytes_total": 10, "events": 7, "fraction": 0.5},
    }  # fmt: skip
    texts = _texts(traces_table([trace]))  # type: ignore[list-item]
    assert any("50% ·" in t and "7 events" in t for t in texts)

"""The series chart and panels: a change for the worse is the first bad commit, and an
accepted baseline is drawn and listed with who, when and why (escaped)."""

from __future__ import annotations

from typing import Any

from dash import html

from dashboard.components.series_panels import acceptance_list, change_list
from dashboard.figures.metrics import series_figure


def _series() -> dict[str, Any]:
    points = [
        {"run": 10 + i, "commit": f"{i:02d}abcdef00", "branch": "main", "timestamp": "t",
         "trace_id": None, "value": v, "p05": v, "p50": v, "p95": v}
        for i, v in enumerate([1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.5, 1.5, 1.5])
    ]  # fmt: skip
    change = {"before": 1.0, "after": 2.0, "p_value": 0.005}
    return {
        "metric": "m",
        "unit": "ms",
        "points": points,
        "thresholds": [],
        "change_points": [
            {**change, "index": 3, "commit": "03abcdef00", "shift_pct": 100.0, "worse": True},
            {**change, "index": 6, "commit": "06abcdef00", "shift_pct": -25.0, "worse": False},
        ],
        "acceptances": [
            {"sla_name": "rel", "run_id": 13, "commit": "03abcdef00", "accepted_by": "user 'a<b>'",
             "accepted_at": "2026-12-01T10:00:00Z", "reason": "new <model>"},
        ],
    }  # fmt: skip


def _texts(component: Any) -> str:
    if isinstance(component, str):
        return component
    children = getattr(component, "children", None)
    items = children if isinstance(children, list) else [children] if children else []
    return "".join(_texts(c) for c in items)


def test_the_figure_names_the_first_bad_commit_and_the_acceptance() -> None:
    notes = [a.text for a in series_figure(_series()).layout.annotations]
    assert notes == [
        "+100.0% at first bad commit 03abcdef (p=0.005)",
        "-25.0% at 06abcdef (p=0.005)",
        "baseline of rel accepted by user 'a&lt;b&gt;' 2026-12-01 10:00",
    ]


def test_the_panels_list_the_first_bad_commit_and_who_accepted_why() -> None:
    series = _series()
    changes = change_list(series)
    assert isinstance(changes, html.Ul)
    assert [_texts(li).count("first bad commit") for li in changes.children] == [1, 0]
    assert _texts(acceptance_list(series)) == (
        "rel: commit 03abcdef00 accepted as the baseline by user 'a<b>' at "
        "2026-12-01 10:00:00 UTC — new <model>"
    )

"""The words that say where steps come from, on the Overview tile and the Timeline."""

from __future__ import annotations

import pytest

from dashboard.components.step_marker import AUTOMATIC, NONE_FOUND, marker_note, marker_options


@pytest.mark.parametrize(
    ("marker", "source", "steps", "text"),
    [
        ("ProfilerStep#N", "ProfilerStep", 3,
         "Steps from ProfilerStep#N, 3 ranges (torch.profiler's ProfilerStep#N)"),
        ("compiled_step", "auto", 4, "Steps from compiled_step, 4 ranges (found automatically)"),
        ("fwd", "user", 2, "Steps from fwd, 2 ranges (chosen for this trace)"),
        (None, None, 0, NONE_FOUND),
        (None, None, 3, ""),  # a summary from before step markers: nothing to say
    ],
)  # fmt: skip
def test_marker_note(marker: str | None, source: str | None, steps: int, text: str) -> None:
    assert marker_note(marker, source, steps) == text


def test_marker_options_put_automatic_then_top_level_families_first() -> None:
    options = marker_options(
        [
            {"marker": "fwd", "count": 9, "top_level": False},
            {"marker": "train_step_N", "count": 5, "top_level": True},
        ]
    )
    assert [o["value"] for o in options] == [AUTOMATIC, "train_step_N", "fwd"]
    assert options[2]["label"] == "fwd (9 ranges, nested)"

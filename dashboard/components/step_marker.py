"""Words for where a trace's steps come from, shared by the Overview tile and the Timeline.

Pure: it takes the `marker` and `marker_source` that the summary's `steps` and the steps API
both carry (`ingest.steps`) and says which marker was used, or that none was found.

Public surface: `marker_note`, `marker_options`, `AUTOMATIC`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

AUTOMATIC = ""  # the marker dropdown's value for "find it automatically"
_WHY = {
    "ProfilerStep": "torch.profiler's ProfilerStep#N",
    "auto": "found automatically",
    "user": "chosen for this trace",
}
NONE_FOUND = (
    "No step marker found: no ProfilerStep#N and no repeated top-level annotation "
    "(record_function or NVTX). Choose one on the Timeline."
)


def marker_note(marker: str | None, source: str | None, steps: int) -> str:
    """One line saying which marker the steps come from, or that there is none.

    >>> marker_note("train_step_N", "auto", 5)
    'Steps from train_step_N, 5 ranges (found automatically)'
    >>> marker_note("nope", "user", 0)
    'Step marker nope (chosen for this trace) names no annotation range: no steps'
    """
    if marker is None:
        return NONE_FOUND if steps == 0 else ""  # summaries from before markers: say nothing
    why = _WHY.get(source or "", source or "")
    if steps == 0:
        return f"Step marker {marker} ({why}) names no annotation range: no steps"
    return f"Steps from {marker}, {steps} ranges ({why})"


def marker_options(options: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Dropdown options for the step marker: automatic first, then the trace's annotation
    families, top-level ones first (the likelier steps)."""
    ordered = sorted(options, key=lambda o: (not o["top_level"], -o["count"], o["marker"]))
    return [{"label": "Automatic (ProfilerStep#N, else a repeated top-level range)",
             "value": AUTOMATIC}] + [
        {"label": f"{o['marker']} ({o['count']} ranges{'' if o['top_level'] else ', nested'})",
         "value": o["marker"]}
        for o in ordered
    ]  # fmt: skip

"""An independent reader of a Chrome trace's events, for checking the timeline API against
the raw file: no perfdash code, times as absolute integer ns (`ts`/`dur` are µs after
`baseTimeNanoseconds`, read as `Decimal` by `flow_pairs.chrome_doc`, so nothing rounds)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.timeline.flow_pairs import chrome_doc

GPU_WORK = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


@dataclass(frozen=True)
class RawEvent:
    """One event of the file: its category, name, place and times (ns)."""

    index: int  # position in `traceEvents`
    ph: str
    cat: str
    name: str
    pid: Any  # an int in the files read here; Chrome allows strings
    tid: Any
    start_ns: int
    dur_ns: int
    args: dict[str, Any]

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


def read_doc(path: Path) -> dict[str, Any]:
    """The document of a Chrome trace file (gzip or not)."""
    return chrome_doc(path.read_bytes())


def _ns(value: Any) -> int:
    ns = Decimal(value) * 1000
    assert ns == ns.to_integral_value(), value
    return int(ns)


def raw_events(doc: dict[str, Any], phases: frozenset[str] = frozenset({"X"})) -> list[RawEvent]:
    """The events of the given phases (complete `X` by default) in file order."""
    base = int(doc.get("baseTimeNanoseconds", 0))
    return [
        RawEvent(
            index=i,
            ph=e["ph"],
            cat=e.get("cat", ""),
            name=e.get("name", ""),
            pid=e.get("pid", 0),
            tid=e.get("tid", 0),
            start_ns=base + _ns(e["ts"]),
            dur_ns=_ns(e.get("dur", 0)),
            args=e.get("args") or {},
        )
        for i, e in enumerate(doc["traceEvents"])
        if e.get("ph") in phases
    ]

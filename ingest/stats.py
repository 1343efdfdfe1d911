"""Streaming aggregates over normalised events: counts by kind and per-kernel statistics.

One implementation serves both `perfdash ingest --json` and the worker that stores the
stats, so the CLI and the API can never disagree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ingest.events import Event, EventKind


@dataclass(frozen=True, slots=True)
class KernelStat:
    """Aggregate of every launch of one kernel name."""

    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    pct: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form, with the field names the API and CLI share."""
        return {
            "name": self.name,
            "count": self.count,
            "total_ns": self.total_ns,
            "mean_ns": self.mean_ns,
            "min_ns": self.min_ns,
            "max_ns": self.max_ns,
            "pct": self.pct,
        }


class TraceStats:
    """Feed events one at a time with `add`; read `counts`, `kernels()` and the time span."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self._kernels: dict[str, list[int]] = {}  # name -> [count, total, min, max]

    def add(self, event: Event) -> None:
        """Account for one event."""
        self.counts[event.kind.value] += 1
        end = event.start_ns + event.dur_ns
        if self.start_ns is None or event.start_ns < self.start_ns:
            self.start_ns = event.start_ns
        if self.end_ns is None or end > self.end_ns:
            self.end_ns = end
        if event.kind is EventKind.KERNEL:
            agg = self._kernels.get(event.name)
            if agg is None:
                self._kernels[event.name] = [1, event.dur_ns, event.dur_ns, event.dur_ns]
            else:
                agg[0] += 1
                agg[1] += event.dur_ns
                agg[2] = min(agg[2], event.dur_ns)
                agg[3] = max(agg[3], event.dur_ns)

    @property
    def duration_ns(self) -> int:
        """Wall time from the first event's start to the last event's end."""
        if self.start_ns is None or self.end_ns is None:
            return 0
        return self.end_ns - self.start_ns

    def kernels(self, top: int | None = None) -> list[KernelStat]:
        """Per-name kernel stats, largest total first (ties by name, for stable output)."""
        gpu_total = sum(agg[1] for agg in self._kernels.values())
        stats = [
            KernelStat(
                name=name,
                count=c,
                total_ns=t,
                mean_ns=t // c,
                min_ns=lo,
                max_ns=hi,
                pct=round(100.0 * t / gpu_total, 3) if gpu_total else 0.0,
            )
            for name, (c, t, lo, hi) in self._kernels.items()
        ]
        stats.sort(key=lambda k: (-k.total_ns, k.name))
        return stats[:top] if top is not None else stats

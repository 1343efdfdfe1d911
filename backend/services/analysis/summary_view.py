"""Typed reads of the stored trace summary (`ingest.summary.Summary`).

Traces ingested before the summary existed store `{"events": n}` only, so every read
tolerates a missing part and answers None ("not known"), never a fake 0.

Public surface: `step_time_ns`, `step_count`, `gpu_time`, `peak_memory_bytes`, `number`.
"""

from typing import Any


def number(summary: dict[str, Any] | None, *path: str) -> float | None:
    """The number at `path` in the summary, or None if any part is absent.

    >>> number({"gpu": {"time": {"idle_pct": 12.5}}}, "gpu", "time", "idle_pct")
    12.5
    >>> number({"events": 3}, "gpu", "time", "idle_pct") is None
    True
    """
    node: Any = summary
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else None


def step_time_ns(summary: dict[str, Any] | None) -> float | None:
    """Median step time: the CPU `ProfilerStep#N` ranges, else their GPU mirrors."""
    cpu = number(summary, "steps", "cpu", "p50_ns")
    return cpu if cpu is not None else number(summary, "steps", "gpu", "p50_ns")


def step_count(summary: dict[str, Any] | None) -> int:
    """Number of steps (0 when the trace has no step annotations)."""
    count = number(summary, "steps", "cpu", "count")
    return int(count) if count else 0


def gpu_time(summary: dict[str, Any] | None) -> dict[str, Any]:
    """The all-device time split, or {} when unknown."""
    gpu = (summary or {}).get("gpu")
    time = gpu.get("time") if isinstance(gpu, dict) else None
    return time if isinstance(time, dict) else {}


def peak_memory_bytes(summary: dict[str, Any] | None) -> float | None:
    """The highest allocated total of any device, or None without memory events."""
    memory = (summary or {}).get("memory")
    if not isinstance(memory, list) or not memory:
        return None
    peaks = [m.get("peak_allocated_bytes") for m in memory if isinstance(m, dict)]
    values = [float(p) for p in peaks if isinstance(p, int | float)]
    return max(values) if values else None

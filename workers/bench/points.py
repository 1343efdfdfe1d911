"""Turn timings into metric points in perfdash's native JSON shape (pure; no torch).

A point is `{"metric", "unit", "direction", "samples" | "value"}`, what `POST
/api/v1/metrics` accepts, so a runner's numbers and a CI push are stored alike.
"""

from __future__ import annotations

from typing import Any

from workers.bench.stats import summarize

LOWER, HIGHER = "lower_is_better", "higher_is_better"


def samples_point(metric: str, unit: str, samples: list[float]) -> dict[str, Any]:
    """A time metric with every per-iteration sample kept."""
    return {"metric": metric, "unit": unit, "direction": LOWER, "samples": samples}


def value_point(metric: str, unit: str, value: float, direction: str) -> dict[str, Any]:
    """A single derived number (throughput, memory)."""
    return {"metric": metric, "unit": unit, "direction": direction, "value": value}


def rate_points(
    samples_ms: list[float],
    *,
    flops: float = 0.0,
    flops_metric: str | None = None,
    nbytes: float = 0.0,
    bandwidth_metric: str | None = None,
    items: float = 0.0,
    items_metric: str | None = None,
) -> list[dict[str, Any]]:
    """Throughputs at the median iteration time: TFLOP/s, GB/s and items/s.

    >>> rate_points([2.0], flops=4e12, flops_metric="tflops")[0]["value"]
    2000.0
    """
    seconds = summarize(samples_ms)["p50"] / 1e3
    out = []
    if flops_metric and flops:
        out.append(value_point(flops_metric, "TFLOP/s", flops / seconds / 1e12, HIGHER))
    if bandwidth_metric and nbytes:
        out.append(value_point(bandwidth_metric, "GB/s", nbytes / seconds / 1e9, HIGHER))
    if items_metric and items:
        out.append(value_point(items_metric, "1/s", items / seconds, HIGHER))
    return out


def memory_points(
    max_allocated: int | None, max_reserved: int | None, fragmentation_pct: float | None
) -> list[dict[str, Any]]:
    """Peak memory points; empty on CPU, where torch keeps no peak."""
    if max_allocated is None or max_reserved is None:
        return []
    out = [
        value_point("peak_mem_allocated_bytes", "B", float(max_allocated), LOWER),
        value_point("peak_mem_reserved_bytes", "B", float(max_reserved), LOWER),
    ]
    if fragmentation_pct is not None:
        out.append(value_point("fragmentation_pct", "%", fragmentation_pct, LOWER))
    return out

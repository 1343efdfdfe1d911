"""Summaries of real traces checked against independent computations over the raw JSON.

The raw side reads the file with the standard library, times as `Decimal` (exact), and
recomputes each figure in the most direct way (brute force where that is clearest), sharing
no code with `ingest`.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from ingest import parse_file
from ingest.summary import SummaryBuilder

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
SYNTHETIC = REPO / "backend" / "sample_data" / "synthetic_train_8gpu_rank0.pt.trace.json.gz"


def _raw(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    base = doc.get("baseTimeNanoseconds", 0)
    events = []
    for e in doc["traceEvents"]:
        if "ts" in e and e.get("ph") in ("X", "i"):
            e["t"] = base + int(Decimal(e["ts"]) * 1000)
            e["d"] = int(Decimal(e.get("dur", 0)) * 1000)
            events.append(e)
    return events


def _pct_rank(values: list[int], p: int) -> int:
    ordered = sorted(values)
    return ordered[math.ceil(Fraction(p, 100) * len(ordered)) - 1]


def _median(values: list[int]) -> int:
    """numpy.median's definition (nsys stats' "Med"), floored to the ns."""
    return math.floor(statistics.median(values))


def _summarize(path: Path) -> tuple[dict[str, Any], SummaryBuilder]:
    parsed = parse_file(path)
    builder = SummaryBuilder()
    for event in parsed.events:
        builder.add(event)
    return builder.finish(parsed.header), builder


@pytest.fixture(scope="module")
def h200() -> tuple[dict[str, Any], SummaryBuilder, list[dict[str, Any]]]:
    summary, builder = _summarize(H200)
    return summary, builder, _raw(H200)


def test_kernel_stats_per_name_equal_the_raw_durations(
    h200: tuple[dict[str, Any], SummaryBuilder, list[dict[str, Any]]],
) -> None:
    _, builder, raw = h200
    durations: dict[str, list[int]] = defaultdict(list)
    for e in raw:
        if e.get("cat") == "kernel":
            durations[e["name"]].append(e["d"])
    total = sum(sum(d) for d in durations.values())
    expected = {
        name: (len(d), sum(d), sum(d) // len(d), min(d), max(d), _median(d), _pct_rank(d, 95),
               round(100 * sum(d) / total, 3))
        for name, d in durations.items()
    }  # fmt: skip
    got = {
        k.name: (k.count, k.total_ns, k.mean_ns, k.min_ns, k.max_ns, k.p50_ns, k.p95_ns, k.pct)
        for k in builder.stats.kernels()
    }
    assert got == expected
    assert len(got) == 12 and sum(v[0] for v in got.values()) == 51


def test_launch_delay_and_launching_ops_equal_the_raw_joins(
    h200: tuple[dict[str, Any], SummaryBuilder, list[dict[str, Any]]],
) -> None:
    summary, builder, raw = h200
    runtime = {
        e["args"]["correlation"]: e
        for e in raw
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    ops = [e for e in raw if e.get("cat") == "cpu_op"]
    delays, by_op = [], defaultdict(int)
    for k in (e for e in raw if e.get("cat") == "kernel"):
        call = runtime[k["args"]["correlation"]]
        delays.append(k["t"] - call["t"])
        around = [
            o for o in ops if o["tid"] == call["tid"] and o["t"] <= call["t"] < o["t"] + o["d"]
        ]
        if around:
            by_op[max(around, key=lambda o: (o["t"], -o["d"]))["name"]] += k["d"]
    delay = summary["launch"]["delay"]
    assert (delay["count"], delay["p50_ns"], delay["p95_ns"]) == (
        51, _median(delays), _pct_rank(delays, 95)
    )  # fmt: skip
    assert (delay["min_ns"], delay["max_ns"]) == (min(delays), max(delays))
    groups = {g.key: g.total_ns for g in builder.kernel_groups() if g.group_by == "cpu_op"}
    assert groups == dict(by_op)


def test_transfers_memory_and_steps_equal_the_raw_events(
    h200: tuple[dict[str, Any], SummaryBuilder, list[dict[str, Any]]],
) -> None:
    summary, _, raw = h200
    copies = [e for e in raw if e.get("cat") == "gpu_memcpy"]
    pageable = sum(e["args"]["bytes"] for e in copies if "Pageable" in e["name"])
    pinned = sum(e["args"]["bytes"] for e in copies if "Pinned" in e["name"])
    transfers = summary["transfers"]
    assert (transfers["pinned_bytes"], transfers["pageable_bytes"]) == (pinned, pageable)
    memory = [e["args"] for e in raw if e["name"] == "[memory]" and e["args"]["Device Type"] == 1]
    (device,) = summary["memory"]
    assert device["peak_allocated_bytes"] == max(a["Total Allocated"] for a in memory)
    assert device["peak_reserved_bytes"] == max(a["Total Reserved"] for a in memory)
    assert device["samples"] == len(memory)
    steps = {e["name"]: e["d"] for e in raw if e.get("cat") == "user_annotation"}
    assert [s["cpu_ns"] for s in summary["steps"]["steps"]] == [
        steps[f"ProfilerStep#{n}"] for n in (2, 3, 4)
    ]
    assert all(s["gpu_ns"] and s["gpu_ns"] > 1_000_000 for s in summary["steps"]["steps"])


def test_gpu_busy_time_is_the_union_of_the_raw_device_intervals(
    h200: tuple[dict[str, Any], SummaryBuilder, list[dict[str, Any]]],
) -> None:
    summary, _, raw = h200
    intervals = sorted(
        (e["t"], e["t"] + e["d"])
        for e in raw
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    )
    busy, reach = 0, intervals[0][0]
    for start, end in intervals:
        busy += max(0, end - max(start, reach))
        reach = max(reach, end)
    time = summary["devices"][0]["time"]
    assert time["busy_ns"] == busy
    assert (
        time["span_ns"] == intervals[-1][1] - intervals[0][0]
        or time["span_ns"] == reach - intervals[0][0]
    )


def test_multi_stream_training_trace_overlaps_communication_with_compute() -> None:
    summary, builder = _summarize(SYNTHETIC)
    time = summary["gpu"]["time"]
    assert 0 < time["comm_compute_overlap_pct"] < 100
    assert 0 < time["idle_pct"] < 100
    assert summary["devices"][0]["rank"] == 0
    assert len(summary["steps"]["steps"]) == 12
    assert summary["steps"]["gpu"] is not None
    assert {p["phase"] for p in summary["memory_phases"]} == {"forward", "backward", "optimizer"}
    (allreduce,) = summary["communication"]["collectives"]
    assert allreduce["collective"] == "allreduce" and allreduce["dtypes"] == ["BFloat16"]
    assert 0 < summary["fusion"]["fused_pct"] < 100
    by_stream = [g for g in builder.kernel_groups() if g.group_by == "stream"]
    assert sum(g.total_ns for g in by_stream) == summary["gpu"]["kernel_ns"]

"""`/operators` against torch's own `key_averages()`, for every trace saved beside one.

Each `<name>.key_averages.json` next to a `<name>.pt.trace.json.gz` (tests/data/torch,
perf/data) was written by torch in the profiler's `on_trace_ready`, from the same run as
the trace: the independent answer. The bar (issue #21): count, device_time_total and,
where torch saved it, cpu_time_total (and the self times) per op name equal key_averages
for the top 20 ops by device time.

Tolerance: 1 ns per call plus 1e-9 relative. The trace writes times as µs with three
decimals (whole ns), torch sums the same ns durations as float µs; an op's total is one
duration, its self time a difference of a few, so a row can be off by at most a rounding
of each call's `dur` and by the float sum's error, never more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest

REPO = Path(__file__).resolve().parents[2]
PAIRS = sorted(
    p
    for folder in (REPO / "tests" / "data" / "torch", REPO / "perf" / "data")
    for p in folder.glob("*.key_averages.json")
    if p.with_name(p.name.replace(".key_averages.json", ".pt.trace.json.gz")).exists()
)
TOP = 20
FIELDS = {  # key_averages field (µs) -> API field (ns)
    "count": "count",
    "device_time_total_us": "device_total_ns",
    "self_device_time_total_us": "device_self_ns",
    "cpu_time_total_us": "cpu_total_ns",
    "self_cpu_time_total_us": "cpu_self_ns",
}


def _torch_ops(path: Path) -> list[dict[str, Any]]:
    """key_averages' CPU rows (operators and record_function ranges), top 20 by device time."""
    entries = json.loads(path.read_text())["entries"]
    cpu = [e for e in entries if e.get("device_type", "CPU") == "CPU"]
    return sorted(cpu, key=lambda e: -e["device_time_total_us"])[:TOP]


def _close(ours: int, theirs_us: float, count: int) -> bool:
    theirs = theirs_us * 1000
    return abs(ours - theirs) <= count + 1e-9 * abs(theirs)


def test_pairs_are_found() -> None:
    assert len(PAIRS) >= 3, PAIRS


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name.split(".")[0])
def test_operators_equal_key_averages(client: TestClient, ingest: Ingest, pair: Path) -> None:
    trace = pair.with_name(pair.name.replace(".key_averages.json", ".pt.trace.json.gz"))
    tid = ingest(trace)
    body = client.get(f"/api/v1/traces/{tid}/operators", params={"limit": 5000}).json()
    ours = {i["name"]: i for i in body["items"] if i["kind"] == "cpu_op"}
    expected = _torch_ops(pair)
    assert expected, "no CPU rows with device time in the key_averages file"
    wrong = []
    for e in expected:
        row = ours.get(e["name"])
        if row is None:
            wrong.append((e["name"], "missing"))
            continue
        for theirs, field in FIELDS.items():
            if theirs not in e:
                continue
            if theirs == "count":
                ok = row["count"] == e["count"]
            else:
                ok = _close(row[field], e[theirs], e["count"])
            if not ok:
                wrong.append((e["name"], field, row[field], e[theirs]))
    assert wrong == []

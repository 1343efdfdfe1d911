"""The bundled synthetic sample trace (``backend/sample_data``).

It must be exactly what its generator (``tests/data/make_sample_trace.py``) writes, and
perfdash's Kineto parser must read it to the same per-kernel totals as an independent sum
over the raw JSON.
"""

from __future__ import annotations

import decimal
import gzip
import json
import re
import subprocess
import sys
import zlib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from ingest import EventKind, TraceFormat, TraceStats, parse_file

REPO = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO / "backend" / "sample_data"
GENERATOR = REPO / "tests" / "data" / "make_sample_trace.py"
SAMPLE = SAMPLE_DIR / "synthetic_train_8gpu_rank0.pt.trace.json.gz"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_APIS = frozenset(
    {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"}
)
TIME_RE = re.compile(r'"(ts|dur)": ([^,\n}]+)')


@pytest.fixture(scope="module")
def text() -> str:
    return gzip.decompress(SAMPLE.read_bytes()).decode("utf-8")


@pytest.fixture(scope="module")
def doc(text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(text, parse_float=decimal.Decimal)
    return parsed


@pytest.fixture(scope="module")
def events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = doc["traceEvents"]
    return result


def to_ns(value: decimal.Decimal) -> int:
    ns = value * 1000
    assert ns == ns.to_integral_value(), f"{value} is not a whole number of ns"
    return int(ns)


def test_regenerating_gives_the_committed_bytes(tmp_path: Path) -> None:
    out = tmp_path / "regenerated.pt.trace.json.gz"
    subprocess.run([sys.executable, str(GENERATOR), str(out)], check=True, capture_output=True)
    fresh, committed = out.read_bytes(), SAMPLE.read_bytes()
    # Compare the JSON first, so a generator change and a zlib difference read differently.
    assert gzip.decompress(fresh) == gzip.decompress(committed), (
        "the generator's output changed: run `python tests/data/make_sample_trace.py` "
        "and commit the new sample"
    )
    # gzip header: deflate, no flags (so no file name), mtime 0
    assert committed[:8] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00"
    assert fresh == committed, f"same JSON, different deflate stream (zlib {zlib.ZLIB_VERSION})"


def test_is_small_enough_to_bundle() -> None:
    assert SAMPLE.stat().st_size < 600 * 1024


def test_parser_kernel_totals_match_an_independent_sum(events: list[dict[str, Any]]) -> None:
    expected_total: dict[str, int] = defaultdict(int)
    expected_count: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == "kernel" and event.get("ph") == "X":
            expected_total[event["name"]] += to_ns(event["dur"])
            expected_count[event["name"]] += 1

    parsed = parse_file(SAMPLE)
    stats = TraceStats()
    for parsed_event in parsed.events:
        stats.add(parsed_event)

    assert parsed.header.format is TraceFormat.KINETO
    assert parsed.report.skipped == 0, parsed.report.warnings
    kernels = stats.kernels()
    assert {k.name: k.total_ns for k in kernels} == dict(expected_total)
    assert {k.name: k.count for k in kernels} == dict(expected_count)
    assert sum(k.total_ns for k in kernels) == sum(expected_total.values())


def test_every_event_kind_is_present() -> None:
    stats = TraceStats()
    for event in parse_file(SAMPLE).events:
        stats.add(event)
    wanted = [
        EventKind.KERNEL,
        EventKind.MEMCPY,
        EventKind.MEMSET,
        EventKind.RUNTIME,
        EventKind.CPU_OP,
        EventKind.ANNOTATION,
        EventKind.GPU_ANNOTATION,
        EventKind.MEMORY,
    ]
    assert {kind.value: stats.counts[kind.value] > 0 for kind in wanted} == {
        kind.value: True for kind in wanted
    }


def test_trace_metadata(doc: dict[str, Any]) -> None:
    header = parse_file(SAMPLE).header
    assert (header.rank, header.world_size) == (0, 8)
    assert header.base_time_ns == doc["baseTimeNanoseconds"]
    assert [d.index for d in header.devices] == list(range(8))
    assert {d.name for d in header.devices} == {"NVIDIA H200"}
    props = header.devices[0].properties
    assert (props["computeMajor"], props["numSms"]) == (9, 132)
    assert doc["perfdash_sample"]["synthetic"] is True


def test_times_are_relative_microseconds_with_three_decimals(text: str) -> None:
    values = [value for _, value in TIME_RE.findall(text)]
    assert values
    bad = [v for v in values if not re.fullmatch(r"\d+\.\d{3}", v)]
    assert not bad, bad[:5]


def test_device_activity_links_to_its_launch(events: list[dict[str, Any]]) -> None:
    runtime = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
    }
    flows: dict[str, dict[int, dict[str, Any]]] = {"s": {}, "f": {}}
    for e in events:
        if e.get("cat") == "ac2g":
            flows[e["ph"]][e["id"]] = e
    steps = [e for e in events if e.get("cat") == "user_annotation"]
    assert sum(e["name"].startswith("ProfilerStep#") for e in steps) == 12

    device = [e for e in events if e.get("cat") in DEVICE_CATS]
    for act in device:
        corr = act["args"]["correlation"]
        launch = runtime[corr]
        assert launch["args"].get("External id") == act["args"].get("External id")
        if act["cat"] == "kernel":
            assert launch["name"] in LAUNCH_APIS
        assert flows["s"][corr]["ts"] == launch["ts"]
        assert (flows["f"][corr]["ts"], flows["f"][corr]["tid"]) == (act["ts"], act["tid"])
        assert to_ns(act["ts"]) >= to_ns(launch["ts"])
    assert len(flows["s"]) == len(flows["f"]) == len(device)

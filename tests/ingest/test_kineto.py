"""Kineto JSON parsing: schema eras, exact totals, and hostile or broken input."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ingest import (
    EventKind,
    IngestError,
    ParseError,
    TraceStats,
    UnsupportedFormatError,
    parse_file,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"


def _write(tmp_path: Path, doc: Any, name: str = "t.json") -> Path:
    path = tmp_path / name
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    return path


def _stats(path: Path) -> tuple[TraceStats, Any]:
    parsed = parse_file(path)
    stats = TraceStats()
    events = list(parsed.events)
    for e in events:
        stats.add(e)
    return stats, (parsed, events)


def _kernel(ts: Any, dur: Any, name: str = "k", cat: str = "kernel", **args: Any) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def test_h200_trace_matches_sums_over_its_raw_json() -> None:
    stats, (parsed, _) = _stats(DATA / "h200_train_step.pt.trace.json.gz")
    expected = json.loads((DATA / "h200_train_step.kernel_sums.json").read_text())
    assert [(k.name, k.count, k.total_ns) for k in stats.kernels()] == [
        (k["name"], k["count"], k["total_ns"]) for k in expected["kernels"]
    ]
    assert parsed.header.devices[0].name == "NVIDIA H200"
    assert parsed.report.skipped == 0


def test_relative_timestamps_use_base_time_and_keep_nanoseconds(tmp_path: Path) -> None:
    doc = {
        "schemaVersion": 1,
        "baseTimeNanoseconds": 1735632360000000000,
        "traceEvents": [_kernel(12.345, 0.999), _kernel("20.001", "1.002")],
    }
    _, (_, events) = _stats(_write(tmp_path, doc))
    assert [(e.start_ns, e.dur_ns) for e in events] == [
        (1735632360000012345, 999),
        (1735632360000020001, 1002),
    ]


def test_2021_categories_and_string_tids(tmp_path: Path) -> None:
    cpu = {"pid": 1, "tid": "25738"}
    doc = {
        "schemaVersion": 1,
        "traceEvents": [
            _kernel(1623143089861000, 5, cat="Kernel") | {"tid": "stream 7"},
            {"ph": "X", "cat": "Operator", "name": "aten::mm", "ts": 1623143089860990, "dur": 20}
            | cpu,
            {"ph": "X", "cat": "Runtime", "name": "cudaLaunch", "ts": 1623143089860995, "dur": 3}
            | cpu,
            {"ph": "i", "name": "[memory]", "ts": 1623143089860999, "args": {"Bytes": 512}} | cpu,
        ],
    }
    stats, (_, events) = _stats(_write(tmp_path, doc))
    kernel = next(e for e in events if e.kind is EventKind.KERNEL)
    assert (kernel.stream, kernel.start_ns, kernel.dur_ns) == (7, 1623143089861000000, 5000)
    assert dict(stats.counts) == {"kernel": 1, "cpu_op": 1, "runtime": 1, "memory": 1}


def test_events_are_classified_by_category_not_pid(tmp_path: Path) -> None:
    python_on_gpu_pid = {
        "ph": "X",
        "cat": "python_function",
        "name": "f",
        "pid": 0,
        "tid": 0,
        "ts": 1,
        "dur": 1,
    }
    stats, _ = _stats(_write(tmp_path, {"traceEvents": [python_on_gpu_pid, _kernel(1, 1)]}))
    assert dict(stats.counts) == {"python": 1, "kernel": 1}


def test_environment_like_metadata_is_not_kept(tmp_path: Path) -> None:
    doc = {
        "traceEvents": [_kernel(1, 1, env_token="x")],
        "cupti_version": 24,
        "environment": {"AWS_SECRET_ACCESS_KEY": "hunter2"},
        "HF_TOKEN": "hf_secret",
        "metadata": {"password": "p"},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "secret": "s", "numSms": 132}],
    }
    _, (parsed, events) = _stats(_write(tmp_path, doc))
    assert parsed.header.metadata == {"cupti_version": 24}
    assert parsed.header.devices[0].properties == {"id": 0, "name": "NVIDIA H200", "numSms": 132}
    assert events[0].args is None
    assert "hunter2" not in repr(parsed.header) + repr(events)


def test_decimal_exact_totals_for_fractional_durations(tmp_path: Path) -> None:
    durations = ["1.001", "2.999", "0.001", "1234567.891"]
    events = ",".join(
        f'{{"ph": "X", "cat": "kernel", "name": "k", "ts": {i}.5, "dur": {d}}}'
        for i, d in enumerate(durations)
    )
    path = tmp_path / "t.json"
    path.write_text(f'{{"baseTimeNanoseconds": 0, "traceEvents": [{events}]}}')
    stats, _ = _stats(path)
    expected = sum(int(Decimal(d) * 1000) for d in durations)
    assert stats.kernels()[0].total_ns == expected == 1234571892


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (_kernel(None, 1), "null, not a number"),
        (_kernel(1, -5), "negative duration"),
        (_kernel(True, 1), "boolean"),
        (_kernel("abc", 1), "not a number"),
        ({"ph": "X", "cat": "kernel", "name": "k", "ts": 1}, "'dur'"),
        ({**_kernel(1, 1), "args": [1, 2]}, "not an object"),
        ("not-an-object", "not an object"),
    ],
)
def test_malformed_events_are_skipped_and_reported(tmp_path: Path, event: Any, reason: str) -> None:
    stats, (parsed, _) = _stats(_write(tmp_path, {"traceEvents": [event, _kernel(5, 2)]}))
    assert stats.counts["kernel"] == 1
    assert parsed.report.skipped == 1
    assert reason in parsed.report.warnings[0]
    assert "traceEvents[0]" in parsed.report.warnings[0]


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (b"", UnsupportedFormatError, "empty"),
        (b" \n\t ", UnsupportedFormatError, "empty"),
        (b"\x00\x01\x02garbage" * 50, UnsupportedFormatError, "not a trace"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1,', ParseError, "invalid JSON"),
        (b'{"traceEvents": {"a": 1}}', ParseError, "no 'traceEvents' list"),
        (b'{"traceEvents": []}garbage', ParseError, "invalid JSON"),
        (b'{"traceEvents": ' + b"[" * 5000 + b"]" * 5000 + b"}", ParseError, "invalid JSON"),
    ],
)
def test_unreadable_files_raise_one_clear_error(
    tmp_path: Path, content: bytes, error: type, message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        _stats(_write(tmp_path, content))
    assert isinstance(info.value, IngestError)


def test_parse_error_names_the_byte_offset(tmp_path: Path) -> None:
    content = b'{"traceEvents": [1, 2, oops]}'
    with pytest.raises(ParseError) as info:
        _stats(_write(tmp_path, content))
    assert info.value.offset == content.index(b"oops")
    assert "t.json" in str(info.value)


def test_truncated_gzip_is_a_parse_error(tmp_path: Path) -> None:
    whole = (DATA / "h200_train_step.pt.trace.json.gz").read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: len(whole) // 3])
    with pytest.raises(ParseError, match="gzip stream is truncated"):
        _stats(path)


def test_gzip_bomb_stops_at_the_decompressed_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    header = b'{"traceEvents": [], "pad": "'
    path.write_bytes(gzip.compress(header + b"0" * (64 * 1024 * 1024) + b'"}'))
    assert path.stat().st_size < 200_000
    with pytest.raises(ParseError, match="decompresses to more than"):
        parse_file(path, max_bytes=8 * 1024 * 1024)


def test_huge_trace_parses_every_event(tmp_path: Path) -> None:
    n = 200_000
    doc = {
        "baseTimeNanoseconds": 0,
        "traceEvents": [_kernel(i, 1, name=f"k{i % 7}") for i in range(n)],
    }
    stats, _ = _stats(_write(tmp_path, doc, "big.json.gz"))
    assert stats.counts["kernel"] == n
    assert sum(k.count for k in stats.kernels()) == n
    assert sum(k.total_ns for k in stats.kernels()) == n * 1000

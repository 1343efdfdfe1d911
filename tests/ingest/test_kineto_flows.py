"""Kineto's own flow events (`fwdbwd`, user flows) kept as `header.flows`, each damaged one
skipped with a parse-report warning, never a failed trace; `ac2g` is not kept (rebuilt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest import parse_file
from ingest.events import Flows, ParseReport

BASE = 1_790_857_026_000_000_000


def _flow(
    ph: str, id_: Any = 1, ts: Any = 10.5, cat: str = "fwdbwd", **more: Any
) -> dict[str, Any]:
    event = {"ph": ph, "id": id_, "pid": 5, "tid": 7, "ts": ts, "cat": cat, "name": cat}
    return {**event, **more}


def _op(ts: float, name: str = "aten::mm") -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 5, "tid": 7, "ts": ts, "dur": 2}


def _parse(tmp_path: Path, events: list[Any]) -> tuple[Flows, ParseReport, int]:
    path = tmp_path / "t.pt.trace.json"
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": BASE, "traceEvents": events}
    path.write_bytes(json.dumps(doc).encode())
    parsed = parse_file(path)
    stored = len(list(parsed.events))
    assert parsed.header.flows is not None
    return parsed.header.flows, parsed.report, stored


def _rows(flows: Flows) -> list[tuple[Any, ...]]:
    return list(zip(flows.id, flows.cat, flows.phase, flows.ts_ns, flows.pid, flows.tid,
                    flows.enclosing, strict=True))  # fmt: skip


def test_fwdbwd_pair_is_kept_exactly_and_ac2g_is_not(tmp_path: Path) -> None:
    events = [
        _op(10.5), _flow("s", 3, 10.5), _op(30.25, "MmBackward0"),
        _flow("f", 3, 30.25, bp="e"), _flow("s", 9, 11, cat="ac2g"),
        _flow("f", 9, 12, cat="ac2g", bp="e"),
        _flow("t", "0x10", "40.001", cat="my_flow"),  # a user's step, a hex id, a quoted ts
    ]  # fmt: skip
    flows, report, stored = _parse(tmp_path, events)
    assert (stored, report.skipped, report.warnings) == (2, 0, [])
    assert _rows(flows) == [
        (3, "fwdbwd", "s", BASE + 10_500, 5, 7, False),
        (3, "fwdbwd", "f", BASE + 30_250, 5, 7, True),
        (16, "my_flow", "t", BASE + 40_001, 5, 7, False),
    ]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ({"id": None}, "no flow id"),
        ({"id": "banana"}, "'banana' is not an integer"),
        ({"id": True}, "True is not an integer"),
        ({"id": 2**70}, "is not an integer"),  # past int64: read as a float
        ({"id": 2**63}, "outside [0, 2**63)"),
        ({"id": -4}, "outside [0, 2**63)"),
        ({"ph": "q"}, "unknown flow phase 'q'"),
        ({"ts": None}, "null"),
        ({"ts": "soon"}, "'soon' is not a number"),
        ({"ts": 9 * 10**15}, "past 2**63 ns"),  # an int64 µs, but not in ns
        ({"pid": 2**63}, "not a 64-bit integer"),
        ({"tid": 2**64 - 1}, "not a 64-bit integer"),
    ],
)
def test_a_damaged_flow_is_skipped_with_a_warning(
    tmp_path: Path, damage: dict[str, Any], why: str
) -> None:
    bad = _flow("s", 4, 12.0) | damage
    events = [_op(10.5), _flow("s", 3, 10.5), bad, _flow("f", 3, 10.5, bp="e")]
    flows, report, stored = _parse(tmp_path, events)
    assert stored == 1
    assert [row[:3] for row in _rows(flows)] == [(3, "fwdbwd", "s"), (3, "fwdbwd", "f")]
    assert report.skipped == 1
    assert report.warnings[0].startswith("traceEvents[2] (flow 'fwdbwd'): ")
    assert why in report.warnings[0]


def test_an_event_of_unknown_category_and_phase_is_no_flow(tmp_path: Path) -> None:
    """Metadata, instants and counters of categories perfdash does not store are not flows
    and not damage; only a `fwdbwd` (or `ac2g`) event of another phase is."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 5, "args": {"name": "x"}},
        {"ph": "i", "cat": "Trace", "name": "mark", "pid": 5, "tid": 7, "ts": 1},
        {"ph": "C", "cat": "my_counter", "name": "c", "pid": 5, "ts": 1, "args": {"v": 1}},
        {"ph": "X", "cat": ["list"], "name": "odd", "pid": 5, "tid": 7, "ts": 1, "dur": 1},
    ]
    flows, report, stored = _parse(tmp_path, events)
    assert (len(flows), report.skipped, stored) == (0, 0, 0)


def test_many_flows_in_a_large_file(tmp_path: Path) -> None:
    """Pieces decoded the typed way and the generic way (the piece holding an integer past
    int64, which msgspec refuses) keep the same flows, in file order."""
    events: list[Any] = []
    for i in range(5000):
        events += [_op(i * 10), _flow("s", i, i * 10), _flow("f", i, i * 10 + 1, bp="e")]
    events.insert(7000, {"ph": "X", "cat": "cpu_op", "name": "big", "pid": 5, "tid": 7,
                         "ts": 1, "dur": 1, "args": {"n": 2**70}})  # fmt: skip
    flows, report, stored = _parse(tmp_path, events)
    assert (stored, report.skipped) == (5001, 0)
    assert flows.id == [i for i in range(5000) for _ in (0, 1)]
    assert flows.ts_ns[-1] == BASE + 49_991_000

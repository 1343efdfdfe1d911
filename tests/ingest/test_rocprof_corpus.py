"""Real rocprof outputs from ../shared/corpus (skipped when absent): rocprof's own stats are the
oracle for perfdash's kernel top-10, and every file ingests (the empty one says "no activity")."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ingest import EventKind, TraceFormat, TraceStats, parse_file

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
V1 = CORPUS / "rocprof_v1"
FILES = sorted([*V1.glob("*"), *(CORPUS / "rocprofv3").glob("*")]) if CORPUS.is_dir() else []
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus absent")


def _stats(path: Path) -> TraceStats:
    stats = TraceStats()
    for event in parse_file(path).events:
        stats.add(event)
    return stats


def test_llamacpp_top10_equals_rocprofs_own_stats() -> None:
    with (V1 / "llamacpp_r9700__results.stats.csv").open(newline="") as f:
        rows = [(r["Name"], int(r["Calls"]), int(r["TotalDurationNs"])) for r in csv.DictReader(f)]
    want = sorted(rows, key=lambda r: (-r[2], r[0]))[:10]
    got = [
        (k.name, k.count, k.total_ns)
        for k in _stats(V1 / "llamacpp_r9700__results.csv").kernels(10)
    ]
    assert got == want
    assert sum(r[2] for r in rows) == 662_138_329


def test_llamacpp_json_has_the_csvs_dispatches() -> None:
    from_csv = _stats(V1 / "llamacpp_r9700__results.csv")
    from_json = _stats(V1 / "llamacpp_r9700__results.json")
    assert from_json.counts == from_csv.counts == {"kernel": 1963}
    assert [(k.name, k.count, k.total_ns) for k in from_json.kernels()] == [
        (k.name, k.count, k.total_ns) for k in from_csv.kernels()
    ]


def test_v1_json_is_not_mistaken_for_torch_profiler() -> None:
    parsed = parse_file(V1 / "llamacpp_r9700__results.json")
    assert parsed.header.format is TraceFormat.ROCPROF_JSON
    list(parsed.events)
    assert parsed.header.devices[2].properties["arch"] == "gfx1201"


def test_empty_trace_is_no_activity_not_an_error() -> None:
    parsed = parse_file(V1 / "jacc_mi300a__results_empty_trace.json")
    assert list(parsed.events) == []
    assert any(w.startswith("no activity") for w in parsed.report.warnings)


def test_old_v1_columns_with_counters() -> None:
    parsed = parse_file(V1 / "omniperf_axes1_mi200__SQ_LEVEL_WAVES_pmc.csv")
    events = list(parsed.events)
    assert len(events) == 167
    assert events[0].args is not None
    assert events[0].args["counters"]["SQ_WAVES"] == 524288
    assert events[0].args["grid_workitems"] == [33554432, 1, 1]
    assert events[0].args["grid"] == [131072, 1, 1]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_corpus_file_ingests(path: Path) -> None:
    parsed = parse_file(path)
    events = list(parsed.events)
    assert parsed.header.format.value.startswith(("rocprof", "rocpd"))
    assert all(e.dur_ns >= 0 for e in events)
    if not events:
        assert any(w.startswith(("no activity", path.name)) for w in parsed.report.warnings)
    kinds = {e.kind for e in events}
    if "kernel_trace" in path.name:
        assert kinds == {EventKind.KERNEL}

"""Public files in layouts our own fixtures never had (issue #36): each read exactly.

Every reference is computed here from the file itself (csv / json / sqlite3), or is the
tool's own summary table; none comes from perfdash. The committed files and their licences
are listed in tests/data/public/MANIFEST. Tests built on ../shared/corpus files are skipped
when the corpus is absent; where a layout was found only in a repository without a licence,
the test writes that layout itself (its columns as the real file has them) and says so.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
import sqlite3
import zipfile
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from ingest import (
    EventKind,
    IngestError,
    ParsedTrace,
    TraceStats,
    UnsupportedFormatError,
    parse_file,
)
from ingest.detect import detect_trace_format
from ingest.events import TraceFormat
from ingest.parsers.rocprof.dispatch_csv import DispatchColumns

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
V1 = CORPUS / "rocprof_v1"
LATE_KINETO = PUBLIC / "tracelens_h100_bert_small.json.gz"
WORKLOAD = PUBLIC / "rocprof_compute_dispatch0_mi200"
needs_corpus = pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is absent")


def _zip(tmp_path: Path, files: dict[str, Path | bytes]) -> Path:
    out = tmp_path / "upload.zip"
    with zipfile.ZipFile(out, "w") as z:
        for name, content in files.items():
            data = content.read_bytes() if isinstance(content, Path) else content
            z.writestr(name, data)
    return out


def _kernels(trace: ParsedTrace) -> dict[str, tuple[int, int]]:
    stats = TraceStats()
    with trace:
        for event in trace.events:
            stats.add(event)
    return {k.name: (k.count, k.total_ns) for k in stats.kernels()}


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_kineto_with_traceevents_behind_a_large_metadata_object_is_detected() -> None:
    with gzip.open(LATE_KINETO, "rb") as f:
        text = f.read()
    assert b'"traceEvents"' not in text[:4096]  # the layout under test: the key comes late
    assert detect_trace_format(LATE_KINETO) is TraceFormat.KINETO


def test_a_json_object_without_trace_events_is_still_refused(tmp_path: Path) -> None:
    other = tmp_path / "config.json"
    other.write_text(json.dumps({"metadata": {"x": "y" * 9000}, "events": [{"ph": "X"}]}))
    with pytest.raises(UnsupportedFormatError, match="not a trace perfdash recognises"):
        detect_trace_format(other)


def test_rocprof_compute_workload_with_pass_copies_reads_exactly(tmp_path: Path) -> None:
    """rocprofiler-compute's own test workload: pmc_perf.csv joins 18 passes side by side,
    so ``obj_1`` ... ``obj_17`` (pointers) sit among the counters."""
    header = next(csv.reader((WORKLOAD / "pmc_perf.csv").open()))
    assert "obj_1" in header
    upload = _zip(tmp_path, {p.name: p for p in WORKLOAD.iterdir()})
    with parse_file(upload) as trace:
        kernels = [e for e in trace.events if e.kind is EventKind.KERNEL]
    rows = _csv_rows(WORKLOAD / "pmc_perf.csv")
    assert [k.name for k in kernels] == [r["Kernel_Name"] for r in rows]
    assert [k.dur_ns for k in kernels] == [
        int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows
    ]
    counters = DispatchColumns(header, "pmc_perf.csv").counters
    copies = [c for c in header if re.fullmatch(r"(obj|wave_size|Kernel_Name|GPU_ID)_\d+", c)]
    assert copies and not set(copies) & set(counters)
    assert "SQ_WAVES" in counters


def test_rocprof_compute_analysis_tables_are_skipped_with_a_note(tmp_path: Path) -> None:
    """``pmc_kernel_top.csv`` as rocprof-compute writes it beside the workload (its header as
    in HGLiu1998/batched_gemm workloads/bmm1, a repository without a licence, so not copied)."""
    rows = _csv_rows(WORKLOAD / "pmc_perf.csv")
    top = "Kernel_Name,Count,Sum(ns),Mean(ns),Median(ns),Pct\n" + "".join(
        f'"{r["Kernel_Name"]}",1,{int(r["End_Timestamp"]) - int(r["Start_Timestamp"])}.0,0,0,100\n'
        for r in rows
    )
    files: dict[str, Path | bytes] = {p.name: p for p in WORKLOAD.iterdir()}
    files["pmc_kernel_top.csv"] = top.encode()
    with parse_file(_zip(tmp_path, files)) as trace:
        assert sum(1 for e in trace.events if e.kind is EventKind.KERNEL) == len(rows)
        notes = [w for w in trace.report.warnings if "pmc_kernel_top.csv" in w]
        assert notes and all("rocprof-compute" in w for w in notes)
    alone = tmp_path / "pmc_kernel_top.csv"
    alone.write_text(top)
    with pytest.raises(UnsupportedFormatError, match="rocprof-compute table that is no trace"):
        detect_trace_format(alone)


def _v1_results_db(path: Path) -> Path:
    """A rocprof v1 results.db: the tables and columns of the one committed in
    HGLiu1998/batched_gemm (no licence, so its layout is rebuilt here, without rows)."""
    with sqlite3.connect(path) as c:
        c.execute('CREATE TABLE HIP ("BeginNs" INTEGER, "EndNs" INTEGER, "pid" INTEGER, '
                  '"tid" INTEGER, "Name" TEXT, "args" TEXT, "Index" INTEGER, "Data" TEXT, '
                  '"__section" INTEGER, "__lane" INTEGER, "DurationNs" INTEGER)')  # fmt: skip
        for table in ("OPS", "COPY"):
            c.execute(f'CREATE TABLE {table} ("BeginNs" INTEGER, "EndNs" INTEGER, '
                      '"dev-id" INTEGER, "queue-id" INTEGER, "Name" TEXT, "pid" INTEGER, '
                      '"tid" INTEGER, "Index" INTEGER, "DurationNs" INTEGER)')  # fmt: skip
        c.execute('CREATE TABLE KERN ("Index" INTEGER, "KernelName" TEXT)')
    c.close()
    return path


@needs_corpus
def test_rocprof_v1_folder_with_results_db_matches_its_stats_csv(tmp_path: Path) -> None:
    files: dict[str, Path | bytes] = {
        "results.csv": V1 / "llamacpp_r9700__results.csv",
        "results.json": V1 / "llamacpp_r9700__results.json",
        "results.stats.csv": V1 / "llamacpp_r9700__results.stats.csv",
        "results.db": _v1_results_db(tmp_path / "results.db"),
    }
    trace = parse_file(_zip(tmp_path, files))
    warnings = trace.report.warnings
    got = _kernels(trace)
    expected = {
        r["Name"]: (int(r["Calls"]), int(r["TotalDurationNs"]))
        for r in _csv_rows(V1 / "llamacpp_r9700__results.stats.csv")
    }  # rocprof's own summary of the same run
    assert got == expected
    assert any("results.db" in w and "rocprof v1" in w for w in warnings)


def test_rocprof_v1_results_db_alone_says_what_it_is(tmp_path: Path) -> None:
    db = _v1_results_db(tmp_path / "results.db")
    with pytest.raises(UnsupportedFormatError, match=r"rocprof v1 results\.db") as e:
        parse_file(db)
    assert "Nsight" not in str(e.value)


@needs_corpus
def test_rocprof_v1_json_with_string_pids_keeps_its_kernels(tmp_path: Path) -> None:
    """Some tblextr versions quote the events' pids (``"pid": "8"``) while the process_name
    metadata keeps integers. Built from the corpus's results.json: its events' pids quoted,
    and their args dropped so that the section alone decides the kind (as in the files that
    showed the bug), plus one event whose pid names no section."""
    doc = json.loads((V1 / "llamacpp_r9700__results.json").read_text(), parse_float=Decimal)
    gpu_pids = {
        e["pid"]
        for e in doc["traceEvents"]
        if e.get("ph") == "M" and re.fullmatch(r"GPU\d+", str(e.get("args", {}).get("name")))
    }
    expected: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            if e["pid"] in gpu_pids:
                expected[e["name"]] += 1
            e["pid"], e["args"] = str(e["pid"]), {}
    doc["traceEvents"].append({"ph": "X", "pid": "GPU?", "name": "k", "ts": "1", "dur": "1"})
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc, default=str))
    with parse_file(path) as trace:
        on_gpu = (EventKind.KERNEL, EventKind.MEMCPY)  # a blit kernel named *copy* is a copy
        got = Counter(e.name for e in trace.events if e.kind in on_gpu and e.device is not None)
        assert got == expected and sum(got.values()) == 1963
        assert trace.report.skipped == 1
        assert "names no section" in trace.report.warnings[0]


def _rocpd_inline(path: Path, dispatches: list[tuple[str, int, int]]) -> None:
    """A rocpd database in rocprofiler-sdk's own schema-3 layout: ``start``/``end`` inline in
    each activity table, pid/tid ids into rocpd_info_process/thread (the columns of the
    rocpd_tables.sql the SDK ships; no rocpd_timestamp, no track_id)."""
    with sqlite3.connect(path) as c:
        c.executescript("""
        CREATE TABLE rocpd_metadata (id INTEGER PRIMARY KEY, tag TEXT, value TEXT);
        INSERT INTO rocpd_metadata (tag, value) VALUES ('schema_version', '3');
        CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, guid TEXT, string TEXT);
        CREATE TABLE rocpd_info_process (id INTEGER PRIMARY KEY, nid INTEGER, pid INTEGER);
        CREATE TABLE rocpd_info_thread (id INTEGER PRIMARY KEY, nid INTEGER, pid INTEGER,
            tid INTEGER);
        CREATE TABLE rocpd_info_agent (id INTEGER PRIMARY KEY, nid INTEGER, pid INTEGER,
            type TEXT, absolute_index INTEGER, logical_index INTEGER, name TEXT,
            model_name TEXT, product_name TEXT);
        CREATE TABLE rocpd_info_kernel_symbol (id INTEGER PRIMARY KEY, kernel_name TEXT,
            display_name TEXT, sgpr_count INTEGER, arch_vgpr_count INTEGER,
            accum_vgpr_count INTEGER);
        CREATE TABLE rocpd_event (id INTEGER PRIMARY KEY, category_id INTEGER,
            correlation_id INTEGER);
        CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, nid INTEGER,
            pid INTEGER, tid INTEGER, agent_id INTEGER, kernel_id INTEGER,
            dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start BIGINT,
            "end" BIGINT, private_segment_size INTEGER, group_segment_size INTEGER,
            workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER,
            grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER,
            region_name_id INTEGER, event_id INTEGER);
        CREATE TABLE rocpd_memory_copy (id INTEGER PRIMARY KEY, nid INTEGER, pid INTEGER,
            tid INTEGER, start BIGINT, "end" BIGINT, name_id INTEGER, dst_agent_id INTEGER,
            src_agent_id INTEGER, size INTEGER, queue_id INTEGER, stream_id INTEGER,
            event_id INTEGER);
        CREATE TABLE rocpd_region (id INTEGER PRIMARY KEY, nid INTEGER, pid INTEGER,
            tid INTEGER, start BIGINT, "end" BIGINT, name_id INTEGER, event_id INTEGER);
        CREATE TABLE rocpd_memory_allocate (id INTEGER PRIMARY KEY, nid INTEGER,
            pid INTEGER, tid INTEGER, agent_id INTEGER, type TEXT, level TEXT, start BIGINT,
            "end" BIGINT, address INTEGER, size INTEGER, event_id INTEGER);
        INSERT INTO rocpd_info_process VALUES (1, 1, 4242);
        INSERT INTO rocpd_info_thread VALUES (1, 1, 1, 4243);
        INSERT INTO rocpd_info_agent VALUES (7, 1, 1, 'GPU', 2, 0, 'gfx942', 'MI300X', 'MI300X');
        """)
        for i, (name, start, end) in enumerate(dispatches, 1):
            c.execute("INSERT INTO rocpd_info_kernel_symbol (id, kernel_name) VALUES (?, ?)",
                      (i, name))  # fmt: skip
            c.execute(
                "INSERT INTO rocpd_kernel_dispatch (nid, pid, tid, agent_id, kernel_id, "
                'dispatch_id, queue_id, stream_id, start, "end", workgroup_size_x, '
                "workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z) "
                "VALUES (1, 1, 1, 7, ?, ?, 1, 0, ?, ?, 64, 1, 1, 1024, 1, 1)",
                (i, i, start, end),
            )
    c.close()


def test_rocpd_inline_start_end_layout_reads_every_dispatch(tmp_path: Path) -> None:
    dispatches = [("gemm", 1_000, 5_500), ("softmax", 6_000, 6_750), ("gemm2", 7_000, 9_001)]
    db = tmp_path / "run_results.db"
    _rocpd_inline(db, dispatches)
    with parse_file(db) as trace:
        events = list(trace.events)
        assert trace.header.metadata["rocpd_layout"] == "inline"
    got = [(e.name, e.start_ns, e.start_ns + e.dur_ns, e.pid, e.tid, e.device) for e in events]
    assert got == [(n, s, e, 4242, 4243, 0) for n, s, e in dispatches]


@needs_corpus
def test_nsys_export_without_metadata_table_is_read_with_a_warning(tmp_path: Path) -> None:
    """The corpus's nsys 2025 export with its META_DATA_EXPORT table dropped, as 2021
    exports came; its kernels still equal nsys's own cuda_gpu_kern_sum report."""
    db = tmp_path / "old.sqlite"
    shutil.copy(CORPUS / "h200" / "nsys2025.3_small.sqlite", db)
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE META_DATA_EXPORT")
    c.close()
    trace = parse_file(db)
    warnings = trace.report.warnings
    got = _kernels(trace)
    summary = _csv_rows(CORPUS / "h200" / "nsys2025.3_small.cuda_gpu_kern_sum.csv")
    assert got == {r["Name"]: (int(r["Instances"]), int(r["Total Time (ns)"])) for r in summary}
    assert any("META_DATA_EXPORT" in w for w in warnings)


@needs_corpus
def test_cupti_range_profiler_events_are_counted_as_skipped() -> None:
    """HTA's CUPTI range-profiler trace: its ``cuda_profiler_range`` events carry counters
    perfdash does not read; they are counted and named, not dropped in silence."""
    path = (
        CORPUS / "kineto" / "hta__cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz"
    )
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    ranges = sum(1 for e in events if e.get("cat") == "cuda_profiler_range" and e.get("ph") == "X")
    with parse_file(path) as trace:
        for _ in trace.events:
            pass
        assert trace.report.skipped == ranges == 77
        assert any("cuda_profiler_range" in w for w in trace.report.warnings)


@needs_corpus
def test_two_ranks_of_a_larger_job_say_which_ranks_are_missing(tmp_path: Path) -> None:
    names = ("hta__sampled_rank-0.json.gz", "hta__sampled_rank-1.json.gz")
    worlds = set()
    for name in names:
        with gzip.open(CORPUS / "kineto" / name) as f:
            worlds.add(json.load(f)["distributedInfo"]["world_size"])
    (world,) = worlds
    upload = _zip(tmp_path, {name: CORPUS / "kineto" / name for name in names})
    with parse_file(upload) as trace:
        assert f"the job had {world} ranks" in " ".join(trace.report.warnings)
        assert f"ranks 2-{world - 1} are missing" in " ".join(trace.report.warnings)


@needs_corpus
def test_stats_csv_with_unquoted_commas_names_the_field_count(tmp_path: Path) -> None:
    """The corpus's results.stats.csv with its names unquoted, as some rocprof versions
    wrote them: the error counts the fields instead of blaming the Calls column."""
    lines = (V1 / "llamacpp_r9700__results.stats.csv").read_text().splitlines()
    first = next(csv.reader([lines[1]]))
    fields = len(first[0].split(",")) + 4
    path = tmp_path / "results.stats.csv"
    path.write_text("\n".join([lines[0], ",".join(first), *lines[2:]]) + "\n")
    trace = parse_file(path)
    with pytest.raises(IngestError, match=f"{fields} fields where the header has 5"), trace:
        list(trace.events)

"""Nsight Systems sqlite exports: real H200 fixtures against `nsys stats`, schema variants,
and every kind of bad input.

References are nsys's own reports of the same `.nsys-rep` (tests/data/nsys/README.md), so
perfdash's numbers are checked against the vendor, not against itself.
"""

from __future__ import annotations

import csv
import hashlib
import sqlite3
import stat
from collections import Counter
from pathlib import Path

import pytest

from ingest import Event, EventKind, ParseError, TraceStats, UnsupportedFormatError, parse_file
from ingest.classify import is_communication
from ingest.events import TraceFormat
from ingest.tools import ExternalTools
from tests.ingest.nsys_files import (
    CORPUS_H200,
    FIXTURES,
    NSYS,
    copy_of,
    corrupt_table_page,
    edit,
    kern_sum,
)


def _read(path: Path, **kwargs: object) -> tuple[list[Event], TraceStats]:
    parsed = parse_file(path, **kwargs)  # type: ignore[arg-type]
    stats = TraceStats()
    events = []
    for event in parsed.events:
        stats.add(event)
        events.append(event)
    return events, stats


def _kernels(stats: TraceStats) -> list[tuple[str, int, int]]:
    return [(k.name, k.count, k.total_ns) for k in stats.kernels()]


CASES = [
    pytest.param(NSYS / f"{n}.sqlite", NSYS / f"{n}_cuda_gpu_kern_sum.csv", id=n) for n in FIXTURES
]
CASES.append(
    pytest.param(
        CORPUS_H200 / "nsys2025.3_small.sqlite",
        CORPUS_H200 / "nsys2025.3_small.cuda_gpu_kern_sum.csv",
        id="corpus",
        marks=pytest.mark.skipif(not CORPUS_H200.is_dir(), reason="../shared/corpus absent"),
    )
)


@pytest.mark.parametrize(("export", "reference"), CASES)
def test_kernel_stats_equal_nsys_stats(export: Path, reference: Path) -> None:
    _, stats = _read(export)
    want = kern_sum(reference)
    got = _kernels(stats)
    assert got[:10] == want[:10]  # names, instances and total ns, in order
    assert sorted(got) == sorted(want)  # and every other kernel too


@pytest.mark.parametrize(("export", "reference"), CASES)
def test_kernel_p50_is_the_median_nsys_stats_reports(export: Path, reference: Path) -> None:
    """p50 is nsys's "Med" (numpy.median: the mean of the two middle values of an even
    count), floored to the ns; a lower median is off by half the middle gap."""
    _, stats = _read(export)
    with reference.open(newline="") as f:
        want = {r["Name"]: float(r["Med (ns)"]) for r in csv.DictReader(f)}
    got = {k.name: k.p50_ns for k in stats.kernels()}
    assert got.keys() == want.keys()
    for name, med in want.items():
        assert got[name] == int(med), name  # Med is exact; ".5" only for even counts


def test_copies_kinds_bytes_and_host_memory() -> None:
    events, _ = _read(NSYS / "copies.sqlite")
    copies = [e for e in events if e.kind is EventKind.MEMCPY]
    by_name = Counter(e.name for e in copies)
    assert by_name == {
        "Memcpy HtoD (Pinned -> Device)": 4,
        "Memcpy HtoD (Pageable -> Device)": 2,
        "Memcpy DtoD (Device -> Device)": 6,
        "Memcpy DtoH (Device -> Pinned)": 4,
        "Memcpy DtoH (Device -> Pageable)": 2,
    }
    with (NSYS / "copies_cuda_gpu_mem_size_sum.csv").open(newline="") as f:
        reference = {
            r["Operation"]: (int(r["Count"]), float(r["Total (MB)"])) for r in csv.DictReader(f)
        }
    for kind, label in (
        ("HtoD", "Host-to-Device"),
        ("DtoH", "Device-to-Host"),
        ("DtoD", "Device-to-Device"),
    ):
        mine = [e for e in copies if e.args and e.args["copy kind"] == kind]
        count, total_mb = reference[f"[CUDA memcpy {label}]"]
        assert len(mine) == count
        assert sum(e.args["bytes"] for e in mine if e.args) == pytest.approx(
            total_mb * 1e6, rel=1e-4
        )
    pageable_streams = {e.stream for e in copies if e.args and "Pageable" in e.name}
    assert len(pageable_streams) == 1 and len({e.stream for e in copies}) == 3
    assert all(e.args and e.args["memory bandwidth (GB/s)"] > 0 for e in copies)


def test_nvtx_ranges_and_domains_equal_nvtx_sum() -> None:
    events, _ = _read(NSYS / "train_step.sqlite")
    ranges = Counter()
    totals: Counter[str] = Counter()
    for e in events:
        if e.kind is EventKind.ANNOTATION and e.args:
            key = f"{e.args.get('domain', '')}:{e.name}"
            ranges[key] += 1
            totals[key] += e.dur_ns
    with (NSYS / "train_step_nvtx_sum.csv").open(newline="") as f:
        reference = list(csv.DictReader(f))
    assert sum(ranges.values()) == sum(int(r["Instances"]) for r in reference)
    for row in reference:
        assert ranges[row["Range"]] == int(row["Instances"]), row["Range"]
        assert totals[row["Range"]] == int(row["Total Time (ns)"]), row["Range"]
    styles = {e.args["style"] for e in events if e.kind is EventKind.ANNOTATION and e.args}
    assert styles == {"PushPop", "StartEnd"}


def test_nccl_kernels_are_communication_on_two_devices() -> None:
    parsed = parse_file(NSYS / "nccl_2gpu.sqlite")
    events = list(parsed.events)
    nccl = [e for e in events if e.kind is EventKind.KERNEL and is_communication(e)]
    assert len(nccl) == 6 and {e.device for e in nccl} == {0, 1}
    assert all(e.name.startswith("ncclDevKernel_AllReduce_Sum_f32") for e in nccl)
    compute = [e for e in events if e.kind is EventKind.KERNEL and not is_communication(e)]
    assert compute and not any("nccl" in e.name.lower() for e in compute)
    assert [d.index for d in parsed.header.devices] == [0, 1]
    assert {d.properties["bus_location"] for d in parsed.header.devices} == {
        "0000:00:06.0", "0000:00:07.0"
    }  # fmt: skip
    domains = {e.args.get("domain") for e in events if e.kind is EventKind.ANNOTATION and e.args}
    assert "NCCL" in domains
    assert len({e.pid for e in nccl}) == 2  # one process per GPU


def test_kernel_launch_args_runtime_correlation_and_graph_nodes() -> None:
    events, _ = _read(NSYS / "train_step.sqlite")
    kernels = [e for e in events if e.kind is EventKind.KERNEL]
    runtime = {(e.pid, e.correlation) for e in events if e.kind is EventKind.RUNTIME}
    assert all((k.pid, k.correlation) in runtime for k in kernels)
    gemm = next(k for k in kernels if k.name.startswith("nvjet_sm90"))
    assert gemm.args is not None
    assert gemm.args["short name"] == gemm.name
    assert len(gemm.args["grid"]) == 3 and len(gemm.args["block"]) == 3
    assert gemm.args["registers per thread"] > 0
    assert gemm.args["shared memory"] == (
        gemm.args["static shared memory"] + gemm.args["dynamic shared memory"]
    )
    softmax = next(k for k in kernels if k.args and k.args["short name"] != k.name)
    assert softmax.name.startswith("void ") and "(" in softmax.name  # demangled, with templates
    graphed = [k for k in kernels if k.args and "graph node id" in k.args]
    assert len(graphed) == 9  # 3 kernels x 3 replays (--cuda-graph-trace=node)
    nodes = [
        e for e in events if e.kind is EventKind.RUNTIME and e.args and e.args["api"] == "graph"
    ]
    assert len(nodes) == 10
    apis = Counter(e.args["api"] for e in events if e.kind is EventKind.RUNTIME and e.args)
    assert apis["runtime"] == 3413 and apis["driver"] == 5042
    names = {e.name for e in events if e.kind is EventKind.RUNTIME}
    assert "cudaLaunchKernel" in names and not any(n.endswith("_v10000") for n in names)
    assert Counter(e.kind for e in events)[EventKind.MEMSET] == 238


def test_devices_metadata_and_times() -> None:
    parsed = parse_file(NSYS / "copies.sqlite")
    events = list(parsed.events)
    assert parsed.header.format is TraceFormat.NSYS_SQLITE
    (gpu,) = parsed.header.devices
    assert gpu.index == 0 and gpu.name == "NVIDIA H200"
    assert gpu.properties["peak_dram_bytes_per_s"] == 4_814_304_000_000  # bytes/s, not bytes
    assert gpu.properties["sm_count"] == 132 and gpu.properties["compute_capability"] == "9.0"
    assert parsed.header.metadata["schema_version"] == "3.20.3"
    assert parsed.header.metadata["session_start_utc_ns"] > 1.7e18
    assert all(isinstance(e.start_ns, int) and e.dur_ns >= 0 for e in events)


def test_environment_is_never_read(tmp_path: Path) -> None:
    path = edit(
        copy_of(NSYS / "copies.sqlite", tmp_path),
        "INSERT INTO TARGET_INFO_SYSTEM_ENV (globalVid, devStateName, name, nameEnum, value) "
        "VALUES (1, 'x', 'HF_TOKEN', 0, 'hf_SECRET_VALUE_123')",
        "INSERT INTO META_DATA_CAPTURE (name, value) "
        "VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', 'AWS_SECRET=SECRET_VALUE_456')",
    )
    parsed = parse_file(path)
    dump = repr(list(parsed.events)) + repr(parsed.header)
    assert "SECRET_VALUE" not in dump


def test_backtrace_duplicates_are_dropped(tmp_path: Path) -> None:
    """nsys 2022 exports hold a class-67 'CUDA backtrace' twin of calls made with backtraces."""
    path = edit(
        copy_of(NSYS / "copies.sqlite", tmp_path),
        "INSERT INTO StringIds (id, value) VALUES (999999, 'cudaMemcpyAsync')",
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
        "correlationId, nameId, returnValue) SELECT start, end, 67, globalTid, correlationId, "
        "999999, 0 FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1) LIMIT 40",
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
        "correlationId, nameId, returnValue) VALUES (5, 9, 67, 281483465981952, 987654, 999999, 0)",
    )
    original = [e for e in _read(NSYS / "copies.sqlite")[0] if e.kind is EventKind.RUNTIME]
    events, _ = _read(path)
    runtime = [e for e in events if e.kind is EventKind.RUNTIME]
    assert len(runtime) == len(original) + 1  # the twins are gone, the orphan is kept
    assert sum(1 for e in runtime if e.args and e.args["api"] == "backtrace") == 1


def test_schema_2x_shape_with_absent_tables(tmp_path: Path) -> None:
    """nsys 2021-2022 exports: EXPORT_META_DATA, no ENUM_* tables, no green contexts; and
    tables absent because nothing of their kind was recorded."""
    conn = sqlite3.connect(copy_of(NSYS / "train_step.sqlite", tmp_path))
    enums = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'ENUM_%'")]
    conn.close()
    path = edit(
        tmp_path / "copy.sqlite",
        "ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA",
        "UPDATE EXPORT_META_DATA SET value = '2.9.1' WHERE name = 'EXPORT_SCHEMA_VERSION'",
        *[f"DROP TABLE {t}" for t in enums],
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN greenContextId",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN mangledName",
        "DROP TABLE NVTX_EVENTS",
        "DROP TABLE CUDA_GRAPH_NODE_EVENTS",
        "DROP TABLE TARGET_INFO_CUDA_DEVICE",
        "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET",
    )
    parsed = parse_file(path)
    stats = TraceStats()
    for event in parsed.events:
        stats.add(event)
    assert _kernels(stats) == kern_sum(NSYS / "train_step_cuda_gpu_kern_sum.csv")
    assert parsed.header.metadata["schema_version"] == "2.9.1"
    assert [d.index for d in parsed.header.devices] == [0]  # by cuDevice without the mapping


def test_upload_is_opened_read_only(tmp_path: Path) -> None:
    path = copy_of(NSYS / "copies.sqlite", tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    path.chmod(stat.S_IRUSR)
    _read(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.sqlite"]  # no journal left


def _truncated(tmp: Path) -> Path:
    data = (NSYS / "train_step.sqlite").read_bytes()
    (tmp / "t.sqlite").write_bytes(data[: len(data) // 3])
    return tmp / "t.sqlite"


def _garbage_after_magic(tmp: Path) -> Path:
    (tmp / "t.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    return tmp / "t.sqlite"


def _bad_page(tmp: Path) -> Path:
    return corrupt_table_page(
        copy_of(NSYS / "train_step.sqlite", tmp), "CUPTI_ACTIVITY_KIND_RUNTIME"
    )


@pytest.mark.parametrize("make", [_truncated, _garbage_after_magic, _bad_page])
def test_truncated_or_corrupt_sqlite_is_a_clear_parse_error(tmp_path: Path, make: object) -> None:
    assert callable(make)
    path = make(tmp_path)
    with pytest.raises(ParseError, match="truncated or corrupt") as info:
        _read(path, source="upload.sqlite")
    assert "upload.sqlite" in str(info.value)


def test_locked_sqlite_is_a_clear_parse_error(tmp_path: Path) -> None:
    path = copy_of(NSYS / "copies.sqlite", tmp_path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ParseError, match="locked by another program"):
            _read(path)
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def _plain_sqlite(tmp: Path) -> Path:
    return edit(tmp / "app.sqlite", "CREATE TABLE users (id INTEGER, name TEXT)")


def _no_strings(tmp: Path) -> Path:
    return edit(copy_of(NSYS / "copies.sqlite", tmp), "DROP TABLE StringIds")


def _nvprof_like(tmp: Path) -> Path:
    return edit(
        tmp / "nvprof.sqlite",
        "CREATE TABLE StringTable (_id_ INTEGER, value TEXT)",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (_id_ INTEGER, name INTEGER, start INTEGER)",
    )


@pytest.mark.parametrize(
    ("make", "missing"),
    [
        (_plain_sqlite, "StringIds, META_DATA_EXPORT or EXPORT_META_DATA"),
        (_no_strings, "missing table(s) StringIds"),
        (_nvprof_like, "StringIds"),
    ],
)
def test_not_an_nsys_export_names_the_missing_tables(
    tmp_path: Path, make: object, missing: str
) -> None:
    assert callable(make)
    with pytest.raises(UnsupportedFormatError, match="not an Nsight Systems export") as info:
        parse_file(make(tmp_path))
    assert missing in str(info.value)


def test_unknown_schema_is_refused(tmp_path: Path) -> None:
    future = edit(
        copy_of(NSYS / "copies.sqlite", tmp_path),
        "UPDATE META_DATA_EXPORT SET value = '9.0.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
    )
    with pytest.raises(UnsupportedFormatError, match=r"schema 9\.0\.0 is not one perfdash knows"):
        parse_file(future)
    no_device = edit(
        copy_of(NSYS / "copies.sqlite", tmp_path, "b.sqlite"),
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN deviceId",
    )
    with pytest.raises(UnsupportedFormatError, match=r"CUPTI_ACTIVITY_KIND_KERNEL.*deviceId"):
        parse_file(no_device)


def test_nsys_rep_without_nsys_gives_the_export_command(tmp_path: Path) -> None:
    report = tmp_path / "blob"
    report.write_bytes(b"NVIDIA Tegra Profiler Report 36398880.\n\x0bLocal" + bytes(200))
    with pytest.raises(UnsupportedFormatError) as info:
        parse_file(report, source="run1.nsys-rep")
    assert "`nsys export --type sqlite -o run1.sqlite run1.nsys-rep`" in str(info.value)


def test_nsys_rep_is_exported_with_the_configured_nsys(tmp_path: Path) -> None:
    """A stand-in `nsys` (the real one is not installed here) that writes the export the real
    one wrote for this fixture, taking the same arguments."""
    fake = tmp_path / "nsys"
    fake.write_text(
        "#!/bin/sh\n"
        'test "$1" = export && test "$3" = sqlite || exit 3\n'
        'for a in "$@"; do prev=$out; out=$a; [ "$prev" = -o ] && dst=$a; done\n'
        f'cp "{NSYS / "copies.sqlite"}" "$dst"\n'
    )
    fake.chmod(0o755)
    report = tmp_path / "blob"
    report.write_bytes(b"NVIDIA Tegra Profiler Report" + bytes(100))
    _, stats = _read(report, source="copies.nsys-rep", tools=ExternalTools(nsys=fake))
    assert _kernels(stats) == kern_sum(NSYS / "copies_cuda_gpu_kern_sum.csv")
    failing = tmp_path / "nsys-broken"
    failing.write_text("#!/bin/sh\necho 'cannot open report' >&2\nexit 1\n")
    failing.chmod(0o755)
    with pytest.raises(ParseError, match="nsys export failed with exit code 1: cannot open report"):
        parse_file(report, source="copies.nsys-rep", tools=ExternalTools(nsys=failing))

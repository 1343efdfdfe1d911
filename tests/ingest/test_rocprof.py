"""AMD rocprof ingest on fixtures built from the formats' documentation
(tests/data/make_rocprof_fixtures.py): every format gives the same kernels, labelled the AMD way."""

from __future__ import annotations

import csv
import tarfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ingest import Event, EventKind, ParseError, TraceFormat, TraceStats, parse_file
from ingest.events import ParseReport
from ingest.parsers.rocprof import parse_folder
from tests.conftest import CORPUS

DATA = Path(__file__).resolve().parents[1] / "data" / "rocprof"
RUN = DATA / "v3_csv" / "host1" / "4242"
GEMM = "gemm_bf16_tn(__hip_bfloat16 const*, __hip_bfloat16 const*, float*)"
ADD = "void vector_add<float>(float*, float const*, float const*, int)"
NCCL = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"
# name, calls, total ns of the generator's five dispatches
EXPECTED = [(GEMM, 2, 178_000), (NCCL, 1, 40_000), (ADD, 2, 23_000)]
T0 = 64_000_000_000_000


def _read(path: Path) -> tuple[Any, list[Event]]:
    parsed = parse_file(path)
    return parsed, list(parsed.events)


def _top(events: list[Event]) -> list[tuple[str, int, int]]:
    stats = TraceStats()
    for e in events:
        stats.add(e)
    return [(k.name.removesuffix(" [clone .kd]").removesuffix(".kd"), k.count, k.total_ns)
            for k in stats.kernels()]  # fmt: skip


@pytest.mark.parametrize(
    ("relpath", "fmt"),
    [
        ("v3_run.zip", TraceFormat.ROCPROFV3_CSV),
        ("v3_run.tar.gz", TraceFormat.ROCPROFV3_CSV),
        ("v3_csv/host1/4242/4242_kernel_trace.csv", TraceFormat.ROCPROFV3_CSV),
        ("v3_old_kernel_trace.csv", TraceFormat.ROCPROFV3_CSV),
        ("4242_results.json", TraceFormat.ROCPROFV3_JSON),
        ("4242_results.db", TraceFormat.ROCPD_SQLITE),
        ("v1/results.csv", TraceFormat.ROCPROF_CSV),
        ("v1/results.json", TraceFormat.ROCPROF_JSON),
        ("v1_old_results.csv", TraceFormat.ROCPROF_CSV),
        ("v2/results_kernel_trace.csv", TraceFormat.ROCPROF_CSV),
    ],
)
def test_every_format_gives_the_same_kernels(relpath: str, fmt: TraceFormat) -> None:
    parsed, events = _read(DATA / relpath)
    assert parsed.header.format is fmt
    assert _top(events) == EXPECTED
    assert parsed.header.metadata["clock_domain"] == "CLOCK_BOOTTIME"
    assert min(e.start_ns for e in events if e.kind is EventKind.KERNEL) == T0 + 1_000


def test_v3_folder_is_one_trace_with_amd_labels() -> None:
    report = ParseReport()
    header, stream = parse_folder(RUN.parent, report, max_bytes=1 << 30, source="run")
    events = list(stream)
    kinds = {k: sum(e.kind is k for e in events) for k in EventKind}
    assert {k: n for k, n in kinds.items() if n} == {
        EventKind.KERNEL: 5, EventKind.MEMCPY: 2, EventKind.MEMORY: 2,
        EventKind.RUNTIME: 9, EventKind.ANNOTATION: 2,
    }  # fmt: skip
    (device,) = header.devices
    assert (device.index, device.name, device.properties["arch"]) == (
        1,
        "AMD Instinct MI300X",
        "gfx942",
    )
    first = next(e for e in events if e.kind is EventKind.KERNEL)
    assert first.args is not None
    assert (first.device, first.stream, first.args["queue"], first.args["hip_stream"]) == (
        1,
        1,
        1,
        1,
    )
    # AMD grids count work-items; CUDA's count blocks: both kept, labelled
    assert first.args["grid_workitems"] == [1_048_576, 1, 1]
    assert first.args["workgroup"] == first.args["block"] == [256, 1, 1]
    assert first.args["grid"] == [4096, 1, 1]
    assert first.args["counters"] == {"SQ_WAVES": 16384}
    assert header.metadata["run"] == "4242/4242"  # folder + prefix
    assert any("no byte count" in w for w in report.warnings)
    assert not any("rocprof's stats say" in w for w in report.warnings)  # kernel_stats agrees


def test_hip_launch_correlates_with_its_kernel() -> None:
    _, events = _read(DATA / "v3_run.zip")
    launches = {e.correlation: e for e in events if e.name == "hipLaunchKernel"}
    kernels = [e for e in events if e.kind is EventKind.KERNEL]
    assert len(launches) == 5
    for kernel in kernels:
        launch = launches[kernel.correlation]
        assert launch.pid == 4242
        assert launch.start_ns < kernel.start_ns


def test_rccl_is_communication() -> None:
    for relpath in ("v3_run.zip", "4242_results.json", "4242_results.db"):
        _, events = _read(DATA / relpath)
        kernel = next(e for e in events if e.name == NCCL)
        assert kernel.args and kernel.args["communication"] is True
        call = next(e for e in events if e.name == "ncclAllReduce")
        assert call.kind is EventKind.RUNTIME
        assert call.args and call.args["Collective name"] == "allreduce"
        assert call.correlation == kernel.correlation, relpath
    _, events = _read(DATA / "v3_run.zip")
    setup = next(e for e in events if e.name == "ncclCommInitAll")
    assert setup.args is not None and "communication" not in setup.args


def test_copies_have_bytes_only_where_the_format_records_them() -> None:
    for relpath, size in (("v3_run.zip", None), ("4242_results.json", 4194304),
                          ("4242_results.db", 4194304)):  # fmt: skip
        _, events = _read(DATA / relpath)
        copy = next(e for e in events if e.kind is EventKind.MEMCPY)
        assert copy.name == "Memcpy HtoD"
        assert copy.args is not None and copy.args.get("bytes") == size, relpath
        assert copy.device == 1


def test_v1_folder_merges_csv_kernels_with_json_api_and_checks_stats() -> None:
    report = ParseReport()
    header, stream = parse_folder(DATA / "v1", report, max_bytes=1 << 30, source="v1")
    events = list(stream)
    assert header.format is TraceFormat.ROCPROF_CSV
    assert sum(e.kind is EventKind.KERNEL for e in events) == 5  # not doubled by results.json
    assert sum(e.name == "hipLaunchKernel" for e in events) == 5
    assert header.devices[0].name == "AMD Instinct MI300X"
    kernel = next(e for e in events if e.kind is EventKind.KERNEL)
    assert kernel.args and kernel.args["grid"] == [4096, 1, 1]
    assert report.warnings == []


def test_stats_table_alone_is_kept_as_metadata() -> None:
    parsed, events = _read(DATA / "v1" / "results.stats.csv")
    assert events == []
    stats = parsed.header.metadata["rocprof_stats"]["results.stats.csv"]
    assert stats[0] == {"name": f"{GEMM}.kd", "calls": 2, "total_ns": 178_000}
    assert any("summary table" in w for w in parsed.report.warnings)


def test_rocprof_compute_workload_gives_roofline_points_and_measured_peaks() -> None:
    parsed, events = _read(DATA / "compute_workload.zip")
    assert parsed.header.format is TraceFormat.ROCPROF_COMPUTE
    (device,) = parsed.header.devices
    assert device.properties["peak_dram_bytes_per_s"] == pytest.approx(4300.5e9)
    assert device.properties["peak_flops_fp32"] == pytest.approx(130000e9)
    assert device.properties["arch"] == "gfx942"
    gemm = next(e for e in events if e.name.startswith("gemm"))
    assert gemm.args is not None
    # dispatch 2: 64*(ADD + MUL + 2*FMA) = 64*(8192 + 2*16384), MFMA 512*2000, MI300 HBM bytes
    assert gemm.args["flops_fp32"] == 64 * (8192 + 2 * 16384)
    assert gemm.args["flops_tensor"] == 512 * 2000
    assert (
        gemm.args["dram_bytes"]
        == 128 * 10 + 32 * 20 + 64 * (200 - 10 - 20) + 32 * (100 - 40) + 64 * 40
    )
    assert "counters" not in gemm.args or len(gemm.args["counters"]) <= 32


@pytest.mark.parametrize(
    ("relpath", "message"),
    [
        (
            "bad/no_header_kernel_trace.csv",
            r"unknown CSV header.*no_header_kernel_trace\.csv, line 1",
        ),
        ("bad/kernel_trace_missing_end.csv", r"missing column\(s\) End_Timestamp.*line 1"),
        ("bad/kernel_trace_bad_cell.csv", r"'soon' in column 'Start_Timestamp'.*line 3"),
        ("bad/mixed_runs.zip", r"different rocprof runs: host1/4242/\S+ .*host1/5151/"),
        ("bad/rocpd_schema_9.db", r"rocpd schema version '9' is not supported"),
    ],
)
def test_bad_input_names_file_and_line(relpath: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        _read(DATA / relpath)


def _zip_run(path: Path, extra: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(RUN / "4242_kernel_trace.csv", "run/4242_kernel_trace.csv")
        for name, data in extra.items():
            zf.writestr(name, data)
    return path


def test_archive_with_traversal_or_a_bomb_is_refused(tmp_path: Path) -> None:
    escape = _zip_run(tmp_path / "escape.zip", {"../4242_hip_api_trace.csv": b"Domain,Function\n"})
    with pytest.raises(ParseError, match=r"path traversal.*escape\.zip, member '\.\./4242_hip"):
        parse_file(escape)
    bomb = _zip_run(tmp_path / "bomb.zip", {"run/4242_hip_api_trace.csv": bytes(4 << 20)})
    with pytest.raises(ParseError, match=r"exceed the 1048576-byte limit.*bomb\.zip"):
        parse_file(bomb, max_bytes=1 << 20)
    assert not (tmp_path / "4242_hip_api_trace.csv").exists()


def _tar_set(path: Path, files: dict[str, Path]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, src in files.items():
            tf.add(src, f"run/{name}")
    return path


V3_DOCS = CORPUS / "rocprofv3"


@pytest.mark.skipif(not V3_DOCS.is_dir(), reason="../shared/corpus absent")
def test_a_set_on_two_clocks_is_refused_naming_both_files(tmp_path: Path) -> None:
    """SDK 0.5's documented kernel and copy traces share a run prefix but come from two
    sessions: their BOOTTIME timestamps (read here with the csv module) are 8,804,374 s
    apart, which merged would be an 8.8-million-second trace."""
    kernels, copies = (
        V3_DOCS / f"sdk_v0.5.0_docs__{t}.csv" for t in ("kernel_trace", "memory_copy_trace")
    )
    starts = {}
    for path in (kernels, copies):
        with path.open(newline="") as f:
            starts[path] = [int(r["Start_Timestamp"]) for r in csv.DictReader(f)]
    gap_s = (min(starts[kernels]) - max(starts[copies])) / 1e9
    assert gap_s > 8_000_000
    named = {"1_kernel_trace.csv": kernels, "1_memory_copy_trace.csv": copies}
    archive = _tar_set(tmp_path / "set.tar.gz", named)
    with pytest.raises(
        ParseError, match=r"1_memory_copy_trace\.csv .* and run/1_kernel_trace\.csv .* s apart"
    ):
        _read(archive)


def test_tables_are_recognised_by_content_not_name(tmp_path: Path) -> None:
    """A run whose files lost their `.csv` names is still read, by their headers."""
    named = {
        "kernels.txt": RUN / "4242_kernel_trace.csv",
        "copies": RUN / "4242_memory_copy_trace.csv",
    }
    _, events = _read(_tar_set(tmp_path / "renamed.tar.gz", named))
    with (RUN / "4242_kernel_trace.csv").open(newline="") as f:
        kernels = sum(1 for _ in csv.DictReader(f))
    with (RUN / "4242_memory_copy_trace.csv").open(newline="") as f:
        copies = sum(1 for _ in csv.DictReader(f))
    kinds = Counter(e.kind for e in events)
    assert (kinds[EventKind.KERNEL], kinds[EventKind.MEMCPY]) == (kernels, copies)

"""Nsight Compute CSV: the measured roofline points of real H200 launches, in every CSV shape
ncu prints, and the bad inputs.

The GEMM is bf16 4096x4096x4096: 2 x 4096^3 = 137,438,953,472 FLOP per launch, independent
of any profiler; the elementwise add moves 3 x 256 MiB through DRAM for 64 Mi FMAs.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ingest import Event, EventKind, ParseError, TraceStats, UnsupportedFormatError, parse_file
from ingest.events import ParseReport, TraceFormat
from ingest.parsers import ncu
from ingest.tools import ExternalTools
from tests.ingest.nsys_files import CORPUS_H200, NCU

GEMM_FLOP = 2 * 4096**3
FIXTURES = ("raw", "details", "summary")


def _flops(e: Event) -> float:
    a = e.args or {}
    return sum(a.get(k, 0.0) for k in ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"))


def _intensity(e: Event) -> float:
    assert e.args is not None
    return _flops(e) / e.args["dram_bytes"]


def _events(path: Path, **kwargs: object) -> tuple[list[Event], object]:
    parsed = parse_file(path, **kwargs)  # type: ignore[arg-type]
    return list(parsed.events), parsed


@pytest.mark.parametrize("page", FIXTURES)
def test_gemm_and_elementwise_roofline_points(page: str) -> None:
    events, parsed = _events(NCU / f"gemm_elementwise_{page}.csv")
    assert parsed.header.format is TraceFormat.NCU_CSV  # type: ignore[attr-defined]
    assert parsed.header.metadata["ncu_page"] == page  # type: ignore[attr-defined]
    assert all(e.kind is EventKind.KERNEL for e in events)
    gemms = [e for e in events if e.name.startswith("nvjet_sm90")]
    adds = [e for e in events if "vectorized_elementwise_kernel" in e.name]
    assert len(gemms) == len(adds) == (1 if page == "summary" else 2)
    for gemm in gemms:
        assert gemm.args is not None
        assert gemm.args["flops_tensor"] == pytest.approx(GEMM_FLOP, rel=1e-3)
        assert gemm.args["flops_fp32"] == 0
        assert _intensity(gemm) > 500  # far right: compute-bound
        assert gemm.args["grid"] == [2, 66, 1] and gemm.args["block"] == [384, 1, 1]
        assert gemm.args["registers per thread"] == 168
        assert gemm.args["sm_throughput_pct"] > 80
    for add in adds:
        assert add.args is not None
        assert add.args["flops_fp32"] == 2 * 64 * 2**20  # one FFMA = 2 FLOP per element
        # 3 x 256 MiB, less the part the 60 MB L2 still held from the previous launch
        assert add.args["dram_bytes"] == pytest.approx(3 * 256 * 2**20, rel=0.05)
        assert _intensity(add) < 0.5  # far left: memory-bound
        assert add.args["achieved_occupancy"] > 50
        assert add.args["mem_throughput_pct"] > 80
    starts = [e.start_ns for e in events]
    assert starts == sorted(starts) and starts[0] == 0  # serialised timeline


def test_raw_page_device_peaks_and_measured_speeds() -> None:
    events, parsed = _events(NCU / "gemm_elementwise_raw.csv")
    (gpu,) = parsed.header.devices  # type: ignore[attr-defined]
    assert gpu.name == "NVIDIA H200" and gpu.properties["sm_count"] == 132
    peaks = gpu.properties
    assert 4.5e12 < peaks["peak_dram_bytes_per_s"] < 5.0e12  # HBM3e, 4.8 TB/s
    assert 0.8e15 < peaks["peak_flops_tensor"] < 1.1e15  # dense bf16
    assert (
        5e13 < peaks["peak_flops_fp32"] < 8e13
        and peaks["peak_flops_fp64"] < peaks["peak_flops_fp32"]
    )
    gemm = next(e for e in events if e.name.startswith("nvjet"))
    add = next(e for e in events if "elementwise" in e.name)
    assert gemm.args is not None and add.args is not None
    achieved = gemm.args["flops_tensor"] / (gemm.dur_ns * 1e-9)
    assert 0.5 * peaks["peak_flops_tensor"] < achieved < peaks["peak_flops_tensor"]
    bandwidth = add.args["dram_bytes"] / (add.dur_ns * 1e-9)
    assert 0.7 * peaks["peak_dram_bytes_per_s"] < bandwidth < peaks["peak_dram_bytes_per_s"]
    assert gemm.args["l2_bytes"] > 0 and gemm.args["l1_bytes"] > 0


def test_summary_page_holds_averages_over_invocations() -> None:
    events, _ = _events(NCU / "gemm_elementwise_summary.csv")
    for e in events:
        assert e.args is not None
        assert e.args["aggregate"] == "average" and e.args["invocations"] == 2
        assert e.args["duration_min_ns"] <= e.dur_ns <= e.args["duration_max_ns"]


def _summary_durations(path: Path) -> dict[str, tuple[int, float, float, float]]:
    """Kernel name -> (Invocations, Average, Minimum, Maximum ns) of the "Duration" rows,
    read with the csv module alone."""
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Metric Name"] == "Duration"]
    assert {r["Metric Unit"] for r in rows} == {"us"}
    return {
        r["Kernel Name"]: (int(r["Invocations"]),
                           *(1000 * float(r[c]) for c in ("Average", "Minimum", "Maximum")))
        for r in rows
    }  # fmt: skip


def test_summary_rows_count_their_invocations_in_kernel_stats() -> None:
    path = NCU / "gemm_elementwise_summary.csv"
    stats = TraceStats()
    for event in parse_file(path).events:
        stats.add(event)
    want = _summary_durations(path)
    got = {k.name: k for k in stats.kernels()}
    assert got.keys() == want.keys()
    for name, (invocations, average, minimum, maximum) in want.items():
        k = got[name]
        assert k.count == invocations, name
        assert k.total_ns == invocations * round(average)
        assert (k.mean_ns, k.min_ns, k.max_ns) == (round(average), round(minimum), round(maximum))
    assert stats.counts["kernel"] == sum(w[0] for w in want.values())


def _raw_page_peaks() -> dict[str, float]:
    """ncu's own roofline peaks in the raw page (its `.peak_sustained` metrics times the
    clock during the launch), the highest over the launches, read with the csv module."""
    lines = (NCU / "gemm_elementwise_raw.csv").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    header, _units, *launches = list(csv.reader(lines[start:]))
    inst = "sm__sass_thread_inst_executed_op_{}_pred_on.sum.peak_sustained"
    tensor = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained"
    peaks: dict[str, float] = {}
    for row in launches:
        m = dict(zip(header, row, strict=True))
        sm_hz = float(m["sm__cycles_elapsed.avg.per_second"])
        for key, value in {
            "peak_flops_fp32": 2 * float(m[inst.format("ffma")]) * sm_hz,
            "peak_flops_fp64": 2 * float(m[inst.format("dfma")]) * sm_hz,
            "peak_flops_fp16": 4 * float(m[inst.format("hfma")]) * sm_hz,
            "peak_flops_tensor": float(m[tensor]) * sm_hz,
            "peak_dram_bytes_per_s": float(m["dram__bytes.sum.peak_sustained"])
            * float(m["dram__cycles_elapsed.avg.per_second"]),
        }.items():
            peaks[key] = max(value, peaks.get(key, 0.0))
    return peaks


@pytest.mark.parametrize("page", ["details", "summary"])
def test_pages_without_peak_metrics_still_name_the_device_and_its_peaks(page: str) -> None:
    """The details and summary pages carry no device name and no `.peak_sustained` metric:
    the device is named by compute capability and SM count, and the peaks derived from the
    clocks and throughput shares agree with ncu's own peaks of the raw page of the same
    workload (a separate profiling run, so to 1%)."""
    parsed = parse_file(NCU / f"gemm_elementwise_{page}.csv")
    list(parsed.events)
    (device,) = parsed.header.devices
    assert device.name == "NVIDIA GPU (compute capability 9.0, 132 SMs)"
    for key, want in _raw_page_peaks().items():
        assert device.properties[key] == pytest.approx(want, rel=0.01), key


@pytest.mark.skipif(not CORPUS_H200.is_dir(), reason="../shared/corpus absent")
def test_corpus_roofline_raw_with_thousands_separators() -> None:
    events, parsed = _events(CORPUS_H200 / "ncu2025.3_roofline_raw.csv")
    assert len(events) == 12
    gemm = next(e for e in events if e.name.startswith("sm80_xmma_gemm_f32f32"))
    assert gemm.args is not None
    # fp32 4096^3 GEMM from SASS FFMA rates x elapsed cycles: ncu's own formula.
    assert gemm.args["flops_fp32"] == pytest.approx(GEMM_FLOP, rel=0.005)
    assert gemm.dur_ns == 2_684_256 and _intensity(gemm) > 100
    adds = [e for e in events if "vectorized_elementwise_kernel" in e.name]
    assert adds and all(_intensity(e) < 1 for e in adds)
    assert parsed.header.devices[0].properties["peak_dram_bytes_per_s"] > 4e12  # type: ignore[attr-defined]


def _write(tmp: Path, text: str, name: str = "k.csv") -> Path:
    (tmp / name).write_text(text)
    return tmp / name


DETAILS_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
    '"Metric Value"'
)


def _detail(launch: int, name: str, unit: str, value: str) -> str:
    return (
        f'"{launch}","9","python3","h","k{launch}","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0",'
        f'"GPU Speed Of Light Throughput","{name}","{unit}","{value}"'
    )


def test_units_that_change_per_row_and_thousands_separators(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "==PROF== Connected to process 9 (/usr/bin/python3)",
            DETAILS_HEADER,
            _detail(0, "Duration", "msecond", "1.50"),
            _detail(0, "dram__bytes.sum", "Gbyte", "2.5"),
            _detail(1, "Duration", "usecond", "250"),
            _detail(1, "dram__bytes.sum", "Kbyte", "1,024.5"),
            _detail(1, "Memory Throughput", "Gbyte/second", "4,096"),
        ]
    )
    events, _ = _events(_write(tmp_path, text))
    assert [e.dur_ns for e in events] == [1_500_000, 250_000]
    assert events[0].args and events[0].args["dram_bytes"] == pytest.approx(2.5e9)
    assert events[1].args and events[1].args["dram_bytes"] == pytest.approx(1_024_500)


def test_unknown_columns_are_ignored_and_reported(tmp_path: Path) -> None:
    lines = (NCU / "gemm_elementwise_raw.csv").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    lines[at] += ',"My Extra Column","another__metric.sum"'
    lines[at + 1] += ',"",""'
    for i in range(at + 2, len(lines)):
        lines[i] += ',"hello","12"'
    events, parsed = _events(_write(tmp_path, "\n".join(lines)))
    assert len(events) == 4
    assert parsed.report.warnings == ["ignored unknown column(s): My Extra Column"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the Nsight Compute CSV is empty"),
        ("\n  \n", "the Nsight Compute CSV is empty"),
        (
            "==PROF== Connected to process 1\n==ERROR== The application returned an error\n",
            r"no Nsight Compute CSV header.*==ERROR== The application returned",
        ),
        ('"0","9","python3","h","k0","1","7"\n', "no Nsight Compute CSV header"),
    ],
)
def test_empty_or_headerless_csv_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    """The parser's own contract (e.g. for the CSV an `ncu --import` printed)."""
    path = _write(tmp_path, text)
    with pytest.raises(ParseError, match=message) as info:
        list(ncu.parse(path, ParseReport(), max_bytes=1 << 20, source="k.csv")[1])
    assert "k.csv" in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "k.csv: the file is empty"), ('"0","9","python3"\n', "k.csv: not a trace perfdash")],
)
def test_empty_or_headerless_upload_is_refused_at_detection(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(UnsupportedFormatError, match=message):
        parse_file(_write(tmp_path, text), source="k.csv")


def test_headerless_csv_named_by_the_parser(tmp_path: Path) -> None:
    """Detection sends ==PROF== files to the ncu parser, which then names what is missing."""
    path = _write(tmp_path, "==PROF== Connected to process 1\n==PROF== Disconnected\n")
    with pytest.raises(ParseError, match=r"no Nsight Compute CSV header \(a line starting"):
        parse_file(path, source="run.csv")


def test_launch_without_duration_is_skipped_and_counted(tmp_path: Path) -> None:
    text = "\n".join([DETAILS_HEADER, _detail(0, "dram__bytes.sum", "byte", "100")])
    parsed = parse_file(_write(tmp_path, text))
    assert list(parsed.events) == []
    assert parsed.report.skipped == 1 and "has no duration" in parsed.report.warnings[0]


def test_ncu_rep_without_ncu_gives_the_import_command(tmp_path: Path) -> None:
    report = tmp_path / "blob"
    report.write_bytes(b"NVR\x00\x02\x00\x00\x00" + bytes(100))
    with pytest.raises(UnsupportedFormatError) as info:
        parse_file(report, source="gemm.ncu-rep")
    assert "`ncu --import gemm.ncu-rep --csv --page raw > gemm.csv`" in str(info.value)


def test_ncu_rep_is_imported_with_the_configured_ncu(tmp_path: Path) -> None:
    """A stand-in `ncu` (none is installed here) printing what the real one printed."""
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\n"
        'test "$1" = --import && test "$3" = --csv && test "$5" = raw || exit 3\n'
        f'cat "{NCU / "gemm_elementwise_raw.csv"}"\n'
    )
    fake.chmod(0o755)
    report = tmp_path / "blob"
    report.write_bytes(b"NVR\x00" + bytes(100))
    events, _ = _events(report, source="gemm.ncu-rep", tools=ExternalTools(ncu=fake))
    assert len(events) == 4
    assert events[0].args and events[0].args["flops_tensor"] == GEMM_FLOP

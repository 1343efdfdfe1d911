"""Reading the three shapes of ``ncu --csv`` output into one record per kernel launch.

- ``--page raw``: wide, one row per launch, one column per metric, a units row first.
- ``--page details``: long, one row per (launch, section, metric) with its own unit; section
  labels (``Duration``, ``Achieved Occupancy``...) are mapped to the metric they show.
- ``--print-summary per-kernel``: long, one row per (kernel, metric) with min/max/average.

Whatever the shape, a `Launch` holds identification strings, numeric metrics in base units
(ns for times) and non-numeric metric text. pyarrow reads the rows in bounded blocks
(`CsvSource`); numbers are converted for all columns at once (`_numbers`), launches built per row.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import ParseError
from ingest.events import ParseReport
from ingest.parsers._csv_arrow import WHITESPACE, CsvSource, Piece
from ingest.parsers._ncu_metrics import number, unit_factor, unit_kind
from ingest.parsers._ncu_sections import SectionCollector

Metrics = Mapping[str, float]
ID_COLUMNS = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
     "Stream", "Block Size", "Grid Size", "Device", "CC"}
)  # fmt: skip
DETAIL_COLUMNS = frozenset(
    {"Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
     "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}
)  # fmt: skip
SUMMARY_COLUMNS = frozenset(
    {"Invocations", "Section Name", "Metric Name", "Metric Unit", "Minimum", "Maximum", "Average"}
)
# Section labels of the details/summary pages -> the metric they display; (label, unit kind).
LABELS: dict[tuple[str, str], str] = {
    ("Duration", "time"): "gpu__time_duration.sum",
    ("Memory Throughput", "%"): "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    ("Memory Throughput", "rate"): "dram__bytes.sum.per_second",
    ("Compute (SM) Throughput", "%"): "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ("DRAM Throughput", "%"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ("SM Frequency", "rate"): "sm__cycles_elapsed.avg.per_second",
    ("DRAM Frequency", "rate"): "dram__cycles_elapsed.avg.per_second",
    ("Memory Frequency", "rate"): "dram__cycles_elapsed.avg.per_second",
    ("Achieved Occupancy", "%"): "sm__warps_active.avg.pct_of_peak_sustained_active",
    ("Registers Per Thread", "other"): "launch__registers_per_thread",
    ("Static Shared Memory Per Block", "other"): "launch__shared_mem_per_block_static",
    ("Dynamic Shared Memory Per Block", "other"): "launch__shared_mem_per_block_dynamic",
    ("# SMs", "other"): "device__attribute_multiprocessor_count",
    # Speed of Light, Occupancy and Warp State labels the sections view reads (`KEEP`)
    ("L1/TEX Cache Throughput", "%"): "l1tex__throughput.avg.pct_of_peak_sustained_active",
    ("L2 Cache Throughput", "%"): "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    ("Theoretical Occupancy", "%"): "sm__maximum_warps_per_active_cycle_pct",
    ("Theoretical Active Warps per SM", "other"): "sm__maximum_warps_avg_per_active_cycle",
    ("Achieved Active Warps Per SM", "other"): "sm__warps_active.avg.per_cycle_active",
    ("Block Limit Registers", "other"): "launch__occupancy_limit_registers",
    ("Block Limit Shared Mem", "other"): "launch__occupancy_limit_shared_mem",
    ("Block Limit Warps", "other"): "launch__occupancy_limit_warps",
    ("Block Limit SM", "other"): "launch__occupancy_limit_blocks",
    ("Block Limit Barriers", "other"): "launch__occupancy_limit_barriers",
    ("Waves Per SM", "other"): "launch__waves_per_multiprocessor",
    # Memory Workload Analysis: the hit rates of the memory hierarchy (issue #26)
    ("L1/TEX Hit Rate", "%"): "l1tex__t_sector_hit_rate.pct",
    ("L2 Hit Rate", "%"): "lts__t_sector_hit_rate.pct",
    ("Warp Cycles Per Issued Instruction", "other"): (
        "smsp__average_warp_latency_per_inst_issued.ratio"
    ),
}
# ncu metric names (`unit__counter.rollup...`) and the section files' helper columns
# (`derived__...`, `derived_tempMetric0`).
_METRIC_NAME = re.compile(r"^[a-z][a-z0-9]*__[A-Za-z0-9_.]+$|^derived_[A-Za-z0-9_.]+$")
_HEADER_STARTS = ('"ID",', '"Process ID",', "ID,", "Process ID,")
_MAX_PREAMBLE_LINES = 100_000
_PLAIN_NUMBER = r"^-?[0-9]{1,300}(\.[0-9]{1,300})?([eE][-+]?[0-9]{1,3})?$"


@dataclass
class Launch:
    """One kernel launch (or one summarised kernel) as read from the CSV."""

    ids: dict[str, str]
    metrics: dict[str, float] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    where: str = ""


@dataclass
class OpenedCsv:
    """The detected page and a one-shot iterator of launches; `close` releases the file."""

    page: str
    launches: Iterator[Launch]

    def close(self) -> None:
        """Stop reading (the file is open only while launches are read)."""
        close = getattr(self.launches, "close", None)
        if close is not None:
            close()


def open_csv(path: Path, source: str, report: ParseReport) -> OpenedCsv:
    """Find the header past any preamble and pick the reader for the page it shows.

    The rows are read by pyarrow (`CsvSource`) from the header's byte offset, as text with
    bytes that are not UTF-8 replaced, as the line reader before it read them.

    Raises:
        ParseError: the file is empty or has no ncu CSV header.
    """
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        header, line_no, offset = _find_header(handle, source)
    src = CsvSource(
        path, max_bytes=1 << 62, source=source, error=ParseError, start=offset,
        start_line=line_no, as_text=True, header=header,
    )  # fmt: skip
    if "Metric Value" in header:
        page, launches = "details", _details(src, header, line_no, report)
    elif "Average" in header and "Invocations" in header:
        page, launches = "summary", _summary(src, header, line_no, report)
    else:
        page, launches = "raw", _raw(src, header, line_no, report)
    return OpenedCsv(page=page, launches=launches)


def _find_header(handle: IO[str], source: str) -> tuple[list[str], int, int]:
    """The header, its line number and its byte offset in the UTF-8 (replaced) text."""
    first_error = ""
    seen_text = False
    offset = 0
    for line_no, line in enumerate(handle, start=1):
        seen_text = seen_text or bool(line.strip())
        if line.startswith(_HEADER_STARTS):
            return next(csv.reader([line])), line_no, offset
        offset += len(line.encode())
        if line.startswith("==ERROR==") and not first_error:
            first_error = f"; ncu printed: {line.strip()[:200]}"
        if line_no >= _MAX_PREAMBLE_LINES:
            break
    if not seen_text:
        raise ParseError("the Nsight Compute CSV is empty", source=source)
    raise ParseError(
        'no Nsight Compute CSV header (a line starting with "ID","Process ID" or '
        f'"Process ID","Process Name"){first_error}',
        source=source,
    )


def _rows(
    src: CsvSource, header: list[str], wanted: list[int], line_no: int
) -> Iterator[tuple[Piece, list[int], list[int]]]:
    """Each piece with, per row, its line (as the line reader counted) and its number of
    cells (an empty line, which pyarrow reads as empty cells, has none)."""
    for piece in src.pieces(wanted):
        n = len(piece)
        widths = [len(header) if piece.width is None else piece.width] * n
        if piece.width is None and n and wanted:
            # one call over all the columns at once: wide pages have ~1,500 of them
            cells = pa.concat_arrays([piece.columns[i] for i in wanted])
            empty = pc.equal(cells, "").to_numpy(zero_copy_only=False)
            rows = np.flatnonzero(empty.reshape(len(wanted), n).all(axis=0)).tolist()
            if rows:
                counts = src.field_counts({piece.first + r for r in rows})
                for r in rows:
                    widths[r] = counts.get(piece.first + r, widths[r])
        yield piece, [line_no + piece.first - 1 + r for r in range(n)], widths


def _metric_columns(
    piece: Piece, metric_cols: list[tuple[int, str]]
) -> list[tuple[int, str, list[float | None], dict[int, str]]]:
    """Each metric column's numbers and its non-numeric text by row, converted in one pass
    over all of them (wide pages have ~1,500 columns)."""
    n = len(piece)
    if not metric_cols or not n:
        return [(i, h, [None] * n, {}) for i, h in metric_cols]
    values, texts = _numbers(pa.concat_arrays([piece.columns[i] for i, _ in metric_cols]))
    out: list[tuple[int, str, list[float | None], dict[int, str]]] = [
        (i, h, values[k * n : (k + 1) * n], {}) for k, (i, h) in enumerate(metric_cols)
    ]
    for at, text in texts.items():
        out[at // n][3][at % n] = text
    return out


def _numbers(column: pa.Array) -> tuple[list[float | None], dict[int, str]]:
    """`number` for every cell (plain decimals cast by pyarrow, the rest in Python), and the
    cells that are no number but not empty, by index."""
    trimmed = pc.utf8_trim(column, WHITESPACE)
    fast = pc.match_substring_regex(trimmed, _PLAIN_NUMBER)
    plain = pc.if_else(fast, trimmed, None)
    values: list[float | None] = pc.cast(plain, pa.float64()).to_pylist()
    texts: dict[int, str] = {}
    others = pc.indices_nonzero(pc.invert(fast))
    for i, raw in zip(others.to_pylist(), column.take(others).to_pylist(), strict=True):
        values[i] = number(raw)
        if values[i] is None and raw:
            texts[i] = raw
    return values, texts


def _warn_unknown(header: list[str], known: frozenset[str], report: ParseReport) -> None:
    unknown = [h for h in header if h not in known and not _METRIC_NAME.match(h)]
    if unknown and len(report.warnings) < report.max_warnings:
        report.warnings.append(f"ignored unknown column(s): {', '.join(unknown[:20])}")


def _raw(src: CsvSource, header: list[str], line_no: int, report: ParseReport) -> Iterator[Launch]:
    _warn_unknown(header, ID_COLUMNS, report)
    ids = [(i, h) for i, h in enumerate(header) if h in ID_COLUMNS]
    metric_cols = [(i, h) for i, h in enumerate(header) if _METRIC_NAME.match(h)]
    wanted = sorted({0, *(i for i, _ in ids), *(i for i, _ in metric_cols)})
    factors: dict[int, float] = {}
    for piece, lines, widths in _rows(src, header, wanted, line_no):
        first = piece.columns[0].to_pylist()
        id_values = [(h, piece.columns[i].to_pylist()) for i, h in ids]
        metrics = _metric_columns(piece, metric_cols)
        for r, (line, width) in enumerate(zip(lines, widths, strict=True)):
            if width != len(header):
                report.skip(f"line {line}: {width} fields where the header has {len(header)}")
                continue
            if not first[r] and not factors:  # the units row under the header
                factors = {i: unit_factor(texts.get(r, "")) or 1.0 for i, _, _, texts in metrics}
                continue
            launch = Launch(ids={h: v[r] for h, v in id_values}, where=f"line {line}")
            for i, name, values, texts in metrics:
                value = values[r]
                if value is None:
                    if r in texts:
                        launch.text[name] = texts[r]
                else:
                    launch.metrics[name] = value * factors.get(i, 1.0)
            yield launch


def _metric_name(label: str, unit: str) -> str | None:
    """The metric a details/summary row shows: its raw name, or a known section label.

    >>> _metric_name("Duration", "usecond"), _metric_name("dram__bytes.sum", "Mbyte")
    ('gpu__time_duration.sum', 'dram__bytes.sum')
    >>> _metric_name("Memory Throughput", "Gbyte/second"), _metric_name("Threads", "thread")
    ('dram__bytes.sum.per_second', None)
    """
    if _METRIC_NAME.match(label):
        return label
    kind = unit_kind(unit)
    return LABELS.get((label, kind))


def _long_rows(
    src: CsvSource,
    header: list[str],
    line_no: int,
    report: ParseReport,
    key_cols: list[str],
) -> Iterator[tuple[tuple[str, ...], dict[str, str], int]]:
    """Rows of a long page as dicts, with the identity key of the launch they belong to."""
    used = set(key_cols) | DETAIL_COLUMNS | SUMMARY_COLUMNS
    wanted = [i for i, h in enumerate(header) if h in used]
    names = [header[i] for i in wanted]
    for piece, lines, widths in _rows(src, header, wanted, line_no):
        columns = [piece.columns[i].to_pylist() for i in wanted]
        for r, (line, width) in enumerate(zip(lines, widths, strict=True)):
            if width < len(header) - 4:  # rule rows may end early; metric rows never do
                report.skip(f"line {line}: {width} fields where the header has {len(header)}")
                continue
            cells = dict(zip(names, (c[r] for c in columns), strict=True))
            yield tuple(cells.get(c, "") for c in key_cols), cells, line


def _details(
    src: CsvSource, header: list[str], line_no: int, report: ParseReport
) -> Iterator[Launch]:
    _warn_unknown(header, ID_COLUMNS | DETAIL_COLUMNS, report)
    key_cols = [c for c in header if c in ID_COLUMNS]
    current: Launch | None = None
    current_key: tuple[str, ...] | None = None
    sections = SectionCollector()
    for key, cells, offset in _long_rows(src, header, line_no, report, key_cols):
        if key != current_key:
            if current is not None:
                yield _with_sections(current, sections, report)
            current_key, sections = key, SectionCollector()
            current = Launch(ids={c: cells[c] for c in key_cols}, where=f"line {offset}")
        assert current is not None
        sections.add(cells, "Metric Value")
        _add_value(current, cells.get("Metric Name") or "", cells.get("Metric Unit") or "",
                   cells.get("Metric Value") or "")  # fmt: skip
    if current is not None:
        yield _with_sections(current, sections, report)


def _with_sections(launch: Launch, sections: SectionCollector, report: ParseReport) -> Launch:
    """The launch with its section rows in `extra` (`_ncu_sections`)."""
    launch.extra["ncu_sections"] = sections.result()
    if sections.dropped and len(report.warnings) < report.max_warnings:
        report.warnings.append(
            f"{launch.where}: {sections.dropped} section row(s) past the first "
            f"{sections.rows} were not kept"
        )
    return launch


def _summary(
    src: CsvSource, header: list[str], line_no: int, report: ParseReport
) -> Iterator[Launch]:
    _warn_unknown(header, ID_COLUMNS | SUMMARY_COLUMNS, report)
    key_cols = [c for c in header if c in ID_COLUMNS or c == "Invocations"]
    current: Launch | None = None
    current_key: tuple[str, ...] | None = None
    sections = SectionCollector()
    for key, cells, offset in _long_rows(src, header, line_no, report, key_cols):
        if key != current_key:
            if current is not None:
                yield _with_sections(current, sections, report)
            current_key, sections = key, SectionCollector()
            current = Launch(ids={c: cells[c] for c in key_cols}, where=f"line {offset}")
            current.extra = {"aggregate": "average", "invocations": _count(cells["Invocations"])}
        assert current is not None
        sections.add(cells, "Average")
        name = _add_value(current, cells.get("Metric Name", ""), cells.get("Metric Unit", ""),
                          cells.get("Average", ""))  # fmt: skip
        if name == "gpu__time_duration.sum":
            factor = unit_factor(cells.get("Metric Unit", "")) or 1.0
            for col, arg in (("Minimum", "duration_min_ns"), ("Maximum", "duration_max_ns")):
                value = number(cells.get(col, ""))
                current.extra[arg] = None if value is None else value * factor
    if current is not None:
        yield _with_sections(current, sections, report)


def _add_value(launch: Launch, label: str, unit: str, raw: str) -> str | None:
    name = _metric_name(label, unit)
    if name is None:
        return None
    value = number(raw)
    if value is None:
        if raw:
            launch.text[name] = raw
        return name
    launch.metrics[name] = value * (unit_factor(unit) or 1.0)
    return name


def _count(text: str) -> int | None:
    value = number(text)
    return None if value is None else int(value)

"""The pyarrow CSV path of the rocprof and ncu parsers: rows as the csv module reads them,
and hostile files refused with the file, line and column named."""

from __future__ import annotations

import csv
import gzip
import io
import random
from pathlib import Path
from typing import Any

import pytest

from ingest import EventKind, IngestError, ParseError, ParseReport, parse_file
from ingest.parsers import _csv_arrow
from ingest.parsers.rocprof import parse_one
from ingest.parsers.rocprof._csv import open_table

HEADER = (
    '"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds",'
    '"scr","arch_vgpr","accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs",'
    '"EndNs","CompleteNs","DurationNs"'
)


def row(i: int, name: str = "kern.kd", begin: str = "", end: str = "") -> str:
    b = begin or str(1000 + 100 * i)
    e = end or str(1050 + 100 * i)
    return f'{i},"{name}",2,0,{i},7,7,256,64,0,0,16,0,128,32,"0x0","0x1",900,{b},{e},1100,50'


def write(tmp_path: Path, text: str | bytes, name: str = "results.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def kernels(path: Path) -> list[tuple[str, int, int]]:
    parsed = parse_file(path)
    return [(e.name, e.start_ns, e.dur_ns) for e in parsed.events if e.kind is EventKind.KERNEL]


def reference_rows(text: str) -> list[tuple[list[str], int]]:
    """The csv module's rows and line numbers, blank rows left out (the old reader)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    out = []
    for cells in reader:
        if cells and any(c.strip() for c in cells):
            out.append(((cells + [""] * len(header))[: len(header)], reader.line_num))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_rows_and_lines_equal_the_csv_module_across_small_blocks(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ragged, blank, quoted-newline and CRLF rows, with blocks of a few rows: same cells,
    and each row's line (`line_of`) is the csv module's `line_num`."""
    monkeypatch.setattr(_csv_arrow, "BLOCK_SIZE", 256)
    rng = random.Random(seed)
    lines = ["a,b,c"]
    for i in range(60):
        lines.append(
            rng.choice(
                [f"{i},x{i},{i * 2}", f"{i},y", f"{i},z,1,extra", "", ",,", " , ,",
                 f'{i},"two\nlines",3', f'"{i}","q""uote",5', f"{i},\x00,6"]
            )
        )  # fmt: skip
    text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"])
    table = open_table(write(tmp_path, text, "t.csv"), max_bytes=1 << 20, source="t.csv")
    rows = [(r.cells, table.csv.line_of(r.line)) for r in table.rows()]
    assert rows == reference_rows(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            HEADER + "\n" + row(0) + "\n" + row(1)[:40],
            r"empty value in column "
            r"'BeginNs' \(results\.csv, line 3\)",
            id="truncated-row",
        ),
        pytest.param(
            HEADER + "\n" + row(0, begin="soon"),
            r"'soon' in column 'BeginNs' is not a number \(results\.csv, line 2\)",
            id="bad-cell",
        ),
        pytest.param(
            HEADER + "\n" + row(0, begin="2000", end="1000"),
            r"kernel ends before it starts .*line 2",
            id="end-before-start",
        ),
        pytest.param(
            HEADER + "\n" + row(0) + "\n" + row(1, name="x" * 200_000),
            r"field larger than field limit \(131072\) \(results\.csv, line 3\)",
            id="huge-field",
        ),
        pytest.param(
            HEADER + "\n" + row(0) + "\n" + row(1) + '\n2,"never closed,2,0\n3,4\n',
            r"empty value in column 'BeginNs' \(results\.csv, line 5\)",
            id="quote-never-closed",
        ),
        pytest.param(
            HEADER + "\n" + row(0, begin="nan"),
            r"'nan' in column 'BeginNs' is not "
            r"finite \(results\.csv, line 2\)",
            id="nan",
        ),
    ],
)
def test_bad_rows_name_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        kernels(write(tmp_path, text))


def test_rows_before_a_bad_cell_are_streamed_first(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join([HEADER, row(0), row(1), row(2, begin="x")]))
    seen = []
    with pytest.raises(ParseError, match=r"'x' in column 'BeginNs'.*line 4"):
        for event in parse_file(path).events:
            seen.append(event.name)
    assert seen == ["kern.kd", "kern.kd"]


def test_invalid_utf8_names_its_byte_offset(tmp_path: Path) -> None:
    data = (HEADER + "\n" + row(0) + "\n").encode() + b'3,"k\xff",2'
    offset = data.index(b"\xff")
    with pytest.raises(ParseError, match=rf"not UTF-8 text \(results\.csv, byte {offset}\)"):
        kernels(write(tmp_path, data))


def test_invalid_utf8_in_a_ragged_row_is_still_named(tmp_path: Path) -> None:
    data = (HEADER + "\n" + row(0) + "\n").encode() + b"3,\xff\n"
    with pytest.raises(ParseError, match=r"not UTF-8 text"):
        kernels(write(tmp_path, data))


def test_bom_nul_blank_and_crlf_rows_are_read(tmp_path: Path) -> None:
    text = "\r\n".join(
        [HEADER, row(0, name="a\x00b"), "", ",,,", "  ", row(1, name="c")]
    )  # fmt: skip
    assert kernels(write(tmp_path, b"\xef\xbb\xbf" + text.encode())) == [
        ("a\x00b", 1000, 50),
        ("c", 1100, 50),
    ]


def test_ragged_rows_are_padded_or_cut(tmp_path: Path) -> None:
    text = "\n".join([HEADER, row(0) + ",9,9,9", row(1).rsplit(",", 2)[0]])
    assert kernels(write(tmp_path, text)) == [("kern.kd", 1000, 50), ("kern.kd", 1100, 50)]


def test_empty_and_header_only_files(tmp_path: Path) -> None:
    empty = open_table(write(tmp_path, b"", "e.csv"), max_bytes=1 << 20, source="e.csv")
    assert empty.header == [] and list(empty.rows()) == []
    with pytest.raises(IngestError, match=r"empty_kernel_trace\.csv"):
        kernels(write(tmp_path, b"", "empty_kernel_trace.csv"))
    parsed = parse_file(write(tmp_path, HEADER + "\n"))
    assert list(parsed.events) == []
    assert any("no activity" in w for w in parsed.report.warnings)


def test_many_columns(tmp_path: Path) -> None:
    """Thousands of counter columns: read, kept out of args (too many), roofline computed."""
    counters = [f"SQ_C{i}" for i in range(3000)]
    text = HEADER + "," + ",".join(counters) + "\n" + row(0) + "," + ",".join(["1"] * 3000)
    [event] = parse_file(write(tmp_path, text)).events
    assert event.args is not None and "counters" not in event.args


def test_a_record_over_the_block_size_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_csv_arrow, "BLOCK_SIZE", 4096)
    text = HEADER + "\n" + row(0) + "\n" + row(1, name="n" * 3000 + '",' + "1," * 3000)
    with pytest.raises(ParseError, match=r"longer than .*results\.csv"):
        kernels(write(tmp_path, text))


def test_gzip_and_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress((HEADER + "\n" + row(0) + "\n").encode())
    assert kernels(write(tmp_path, data, "results.csv.gz")) == [("kern.kd", 1000, 50)]
    cut = write(tmp_path, data[:-12], "cut_results.csv.gz")
    with pytest.raises(ParseError, match="cut_results"):
        list(parse_one(cut, ParseReport(), max_bytes=1 << 20, source=cut.name)[1])


def test_over_the_size_cap(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join([HEADER, *(row(i) for i in range(200))]))
    with pytest.raises(ParseError, match="limit"):
        list(parse_file(path, max_bytes=4096).events)


NCU_RAW = Path(__file__).parents[1] / "data" / "ncu" / "gemm_elementwise_raw.csv"
NCU_DETAILS = Path(__file__).parents[1] / "data" / "ncu" / "gemm_elementwise_details.csv"


def ncu_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def ncu_events(tmp_path: Path, lines: list[str], name: str = "k.csv") -> tuple[list[str], Any]:
    parsed = parse_file(write(tmp_path, "\n".join(lines) + "\n", name))
    return [e.name for e in parsed.events], parsed.report


def test_ncu_raw_skips_ragged_and_empty_lines_naming_them(tmp_path: Path) -> None:
    lines = ncu_lines(NCU_RAW)
    header = lines.index(next(x for x in lines if x.startswith('"ID"')))
    width = len(next(csv.reader([lines[header]])))
    rows = [*lines[: header + 3], "", '"9","1"', *lines[header + 3 :]]
    names, report = ncu_events(tmp_path, rows)
    assert len(names) == len(lines) - header - 2
    assert report.warnings[-2:] == [
        f"line {header + 4}: 0 fields where the header has {width}",
        f"line {header + 5}: 2 fields where the header has {width}",
    ]


def test_ncu_invalid_utf8_nul_and_bom_are_read_as_text(tmp_path: Path) -> None:
    """The line reader replaced bytes that are not UTF-8; kernel names keep NUL bytes."""
    data = NCU_RAW.read_bytes().replace(b"nvjet", b"nv\xffj\x00et", 1)
    parsed = parse_file(write(tmp_path, data, "k.csv"))
    names = [e.name for e in parsed.events]
    assert any("nv\ufffdj\x00et" in n for n in names)


def test_ncu_a_quote_never_closed_leaves_one_short_row(tmp_path: Path) -> None:
    lines = ncu_lines(NCU_RAW)
    names, report = ncu_events(tmp_path, [*lines, '"99","1","never closed'])
    assert len(names) == len([x for x in lines if x.startswith('"')]) - 2
    assert report.skipped == 1 and "3 fields where the header has" in report.warnings[-1]


def test_ncu_huge_field_and_many_columns(tmp_path: Path) -> None:
    lines = ncu_lines(NCU_RAW)
    header = lines.index(next(x for x in lines if x.startswith('"ID"')))
    wide = [f"{x},{','.join(['1'] * 5000)}" for x in lines[header:]]
    wide[0] = lines[header] + "," + ",".join(f'"extra{i}"' for i in range(5000))
    names, report = ncu_events(tmp_path, [*lines[:header], *wide])
    assert names and any("ignored unknown column(s): extra0" in w for w in report.warnings)
    huge = [*lines[: header + 2], lines[header + 2].replace("nvjet", "n" * 300_000, 1)]
    with pytest.raises(ParseError, match=r"field larger than field limit .*k\.csv, line"):
        ncu_events(tmp_path, [*huge, *lines[header + 3 :]])


def test_ncu_details_truncated_mid_row(tmp_path: Path) -> None:
    lines = ncu_lines(NCU_DETAILS)
    names, report = ncu_events(tmp_path, [*lines[:-1], ",".join(lines[-1].split(",")[:5])])
    assert names and report.skipped == 1


def test_whitespace_is_str_strips_set() -> None:
    """The literal equals every character `str.isspace` accepts, the set `str.strip` trims."""
    from ingest.parsers._csv_arrow import WHITESPACE

    assert "".join(c for c in map(chr, range(0x110000)) if c.isspace()) == WHITESPACE

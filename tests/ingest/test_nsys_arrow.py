"""The nsys parser's Arrow readers (ADBC) against its row readers (sqlite3), and the files that
would trip the Arrow path: mixed-type columns, missing and empty tables, non-sqlite and
truncated files, damage past the first batch, and what the ADBC connection refuses.

Every variant starts from a committed export and changes one thing (`tests.ingest.nsys_files`),
and each expected event list is the row readers' own output on the same file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from adbc_driver_manager import Error as AdbcError

from ingest import ParseError, UnsupportedFormatError
from ingest.events import EventBlock, EventKind, ParseReport
from ingest.parsers import _nsys_arrow as arrow
from ingest.parsers import _nsys_events as tables
from ingest.parsers import nsys
from ingest.parsers._sqlite import MAX_VALUE_BYTES, open_arrow
from tests.ingest.nsys_files import CORPUS_H200, FIXTURES, NSYS, copy_of, corrupt_table_page, edit
from tests.ingest.nsys_rows import events

EXPORTS = [pytest.param(NSYS / f"{n}.sqlite", id=n) for n in (*FIXTURES, "nvtx_steps")]
EXPORTS.append(
    pytest.param(
        CORPUS_H200 / "nsys2025.3_small.sqlite",
        id="corpus",
        marks=pytest.mark.skipif(not CORPUS_H200.is_dir(), reason="the corpus is absent"),
    )
)
ARROW_TABLES = (
    tables.KERNEL, tables.MEMCPY, tables.MEMSET, tables.SYNC, tables.RUNTIME, tables.NVTX,
)  # fmt: skip


def _same_as_rows(path: Path) -> ParseReport:
    """Assert the Arrow readers give the row readers' events, skips and warnings; return the
    Arrow side's report."""
    got, report = events(path)
    want, want_report = events(path, rows=True)
    assert got == want
    assert report.skipped == want_report.skipped
    assert [w for w in report.warnings if "read row by row" not in w] == want_report.warnings
    return report


@pytest.mark.parametrize("path", EXPORTS)
def test_arrow_events_equal_the_row_readers(path: Path) -> None:
    report = _same_as_rows(path)
    assert not any("read row by row" in w for w in report.warnings)


def test_the_large_tables_come_as_blocks() -> None:
    _, items = nsys.parse(
        NSYS / "train_step.sqlite", ParseReport(), max_bytes=1 << 30, source="t.sqlite"
    )
    kinds = {i.kind for i in items if isinstance(i, EventBlock)}
    assert kinds == {EventKind.KERNEL, EventKind.MEMCPY, EventKind.MEMSET, EventKind.SYNC,
                     EventKind.RUNTIME, EventKind.ANNOTATION}  # fmt: skip


def test_backtrace_duplicates_are_dropped_as_the_row_readers_drop_them(tmp_path: Path) -> None:
    """Runtime rows given a backtrace-class twin (same process and correlation id) and lone
    backtrace rows (no twin): the first are dropped, the second kept at the end."""
    path = copy_of(NSYS / "train_step.sqlite", tmp_path)
    _copy_runtime_rows(path, "rowid % 3 = 0", "correlationId")
    _copy_runtime_rows(path, "rowid % 50 = 1 AND eventClass <> 67", "correlationId + 1000000000")
    report = _same_as_rows(path)
    assert any("backtrace rows had no runtime/driver row" in w for w in report.warnings)


def _copy_runtime_rows(path: Path, where: str, correlation: str) -> None:
    """Append backtrace-class (67) copies of the runtime rows `where` selects."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({tables.RUNTIME})")]
        values = {"eventClass": "67", "correlationId": correlation}
        picked = ", ".join(values.get(c, f'"{c}"') for c in cols)
        names = ", ".join(f'"{c}"' for c in cols)
        conn.execute(
            f"INSERT INTO {tables.RUNTIME} ({names}) SELECT {picked} FROM {tables.RUNTIME} "
            f"WHERE {where}"
        )
    finally:
        conn.close()


def _first_kernel(column: str, value: str) -> str:
    return (
        f"UPDATE {tables.KERNEL} SET {column} = {value} "
        f"WHERE rowid = (SELECT min(rowid) FROM {tables.KERNEL})"
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("registersPerThread", "'many'"), ("gridX", "2.5"), ("correlationId", "x'00ff'")],
)
def test_a_mixed_type_column_is_read_row_by_row(tmp_path: Path, column: str, value: str) -> None:
    """A text, real or blob among a column's integers: the driver cannot type the column, so
    the table is read by the row readers, with the same events, and the report says so."""
    path = edit(copy_of(NSYS / "copies.sqlite", tmp_path), _first_kernel(column, value))
    report = _same_as_rows(path)
    assert any(f"{tables.KERNEL} read row by row" in w and column in w for w in report.warnings)


def test_a_mixed_type_time_is_a_clear_parse_error(tmp_path: Path) -> None:
    path = edit(copy_of(NSYS / "copies.sqlite", tmp_path), _first_kernel("start", "'soon'"))
    with pytest.raises(ParseError, match="wrong type") as caught:
        events(path)
    assert tables.KERNEL in str(caught.value)


def _grown_runtime(tmp_path: Path) -> Path:
    """train_step with its runtime table four times over (past two Arrow batches)."""
    path = copy_of(NSYS / "train_step.sqlite", tmp_path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({tables.RUNTIME})")]
        names = ", ".join(f'"{c}"' for c in cols)
        for _ in range(2):
            conn.execute(
                f"INSERT INTO {tables.RUNTIME} ({names}) SELECT {names} FROM {tables.RUNTIME}"
            )
        assert conn.execute(f"SELECT count(*) FROM {tables.RUNTIME}").fetchone()[0] > 2 * (
            arrow.BLOCK_ROWS
        )
    finally:
        conn.close()
    return path


def test_a_type_change_past_the_first_batch_is_a_parse_error_naming_table_and_column(
    tmp_path: Path,
) -> None:
    """Past the first batch the blocks already went out: no fallback, a clear error."""
    path = edit(
        _grown_runtime(tmp_path),
        f"UPDATE {tables.RUNTIME} SET correlationId = 1.5 "
        f"WHERE rowid = (SELECT max(rowid) FROM {tables.RUNTIME})",
    )
    with pytest.raises(ParseError, match="holds values of the wrong type") as caught:
        events(path)
    assert tables.RUNTIME in str(caught.value)
    assert "correlationId" in str(caught.value)


def test_damage_past_the_first_batch_is_a_parse_error_naming_the_table(tmp_path: Path) -> None:
    path = corrupt_table_page(_grown_runtime(tmp_path), tables.RUNTIME, rows_only=True)
    with pytest.raises(ParseError, match="truncated or corrupt") as caught:
        events(path)
    assert f"reading {tables.RUNTIME}" in str(caught.value)


@pytest.mark.parametrize("table", ARROW_TABLES)
def test_a_missing_table_is_read_as_no_events(tmp_path: Path, table: str) -> None:
    path = edit(copy_of(NSYS / "train_step.sqlite", tmp_path), f"DROP TABLE {table}")
    _same_as_rows(path)


@pytest.mark.parametrize("table", ARROW_TABLES)
def test_a_zero_row_table_is_read_as_no_events(tmp_path: Path, table: str) -> None:
    path = edit(copy_of(NSYS / "train_step.sqlite", tmp_path), f"DELETE FROM {table}")
    got, _ = events(path)
    assert got
    kind = {tables.KERNEL: EventKind.KERNEL, tables.MEMCPY: EventKind.MEMCPY}.get(table)
    assert kind is None or not any(e.kind is kind for e in got)
    _same_as_rows(path)


def _nvtx(path: Path, sql: str) -> Path:
    return edit(copy_of(NSYS / "nccl_2gpu.sqlite", path), sql.format(t=tables.NVTX))


def test_nvtx_ranges_without_an_end_are_skipped_as_the_row_readers_skip_them(
    tmp_path: Path,
) -> None:
    path = _nvtx(tmp_path, "UPDATE {t} SET end = NULL WHERE rowid % 4 = 1 AND eventType <> 75")
    report = _same_as_rows(path)
    assert report.skipped and any("has no end" in w for w in report.warnings)


def test_nvtx_text_registered_or_inline_or_absent_reads_as_the_row_readers_read_it(
    tmp_path: Path,
) -> None:
    path = _nvtx(
        tmp_path,
        "UPDATE {t} SET text = CASE rowid % 3 WHEN 0 THEN NULL WHEN 1 THEN 'inline ' || rowid "
        "ELSE text END, textId = CASE WHEN rowid % 5 = 0 THEN 999999 ELSE textId END",
    )
    _same_as_rows(path)


def test_an_nvtx_blob_among_its_texts_is_read_row_by_row(tmp_path: Path) -> None:
    path = _nvtx(tmp_path, "UPDATE {t} SET text = x'ff00ff' WHERE eventType = 59")
    report = _same_as_rows(path)
    assert any(f"{tables.NVTX} read row by row" in w for w in report.warnings)


def test_an_nvtx_text_over_the_value_cap_is_refused_naming_the_table(tmp_path: Path) -> None:
    """ADBC sets no length limit: the reader checks the text it read, as sqlite3 would."""
    path = _nvtx(
        tmp_path,
        f"UPDATE {{t}} SET text = printf('%.*c', {MAX_VALUE_BYTES + 1}, 'n') "
        "WHERE rowid = (SELECT max(rowid) FROM {t} WHERE eventType = 59)",
    )
    with pytest.raises(ParseError, match=f"over the {MAX_VALUE_BYTES}-byte limit") as caught:
        events(path)
    assert f"reading {tables.NVTX}" in str(caught.value)


def test_a_missing_strings_table_names_it(tmp_path: Path) -> None:
    path = edit(copy_of(NSYS / "train_step.sqlite", tmp_path), "DROP TABLE StringIds")
    with pytest.raises(UnsupportedFormatError, match=r"missing table\(s\) StringIds"):
        events(path)


def test_a_kernel_name_id_without_a_string_reads_as_the_row_readers_read_it(
    tmp_path: Path,
) -> None:
    path = edit(copy_of(NSYS / "copies.sqlite", tmp_path), _first_kernel("demangledName", "999999"))
    _same_as_rows(path)


def _parse_direct(path: Path) -> None:
    _, items = nsys.parse(path, ParseReport(), max_bytes=1 << 30, source="upload.sqlite")
    for _ in items:
        pass


def test_a_file_that_is_not_sqlite_is_a_clear_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    path.write_bytes(b"this is a text file, not a database\n" * 200)
    with pytest.raises(ParseError, match="truncated or corrupt") as caught:
        _parse_direct(path)
    assert "upload.sqlite" in str(caught.value)


@pytest.mark.parametrize("keep", [0.4, 0.9])
def test_a_truncated_export_is_a_clear_parse_error(tmp_path: Path, keep: float) -> None:
    data = (NSYS / "train_step.sqlite").read_bytes()
    path = tmp_path / "t.sqlite"
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ParseError, match="truncated or corrupt") as caught:
        _parse_direct(path)
    assert "upload.sqlite" in str(caught.value)


def test_the_adbc_connection_reads_only_and_loads_no_extension(tmp_path: Path) -> None:
    path = copy_of(NSYS / "copies.sqlite", tmp_path)
    conn = open_arrow(path)
    try:
        with conn.cursor() as cur:
            for sql in (
                "CREATE TABLE t (x INTEGER)",
                f"DELETE FROM {tables.KERNEL}",
                "SELECT load_extension('libnothing')",
            ):
                with pytest.raises(AdbcError, match=r"readonly|not authorized|query_only"):
                    cur.execute(sql)
                    cur.fetchall()
            cur.execute("PRAGMA trusted_schema")
            assert cur.fetchall() == [(0,)]
    finally:
        conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.sqlite"]


def test_a_file_name_with_uri_characters_opens_the_same_file(tmp_path: Path) -> None:
    """Both connections take the file as a URI: `?`, `#`, `%` and spaces are escaped."""
    path = copy_of(NSYS / "copies.sqlite", tmp_path, "run 1?mode=rw#x%20.sqlite")
    _same_as_rows(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]

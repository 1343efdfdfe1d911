"""Uploaded sqlite databases (nsys exports, rocpd) are read, never run (issue 25, item 2).

Each case starts from a committed fixture and adds one hostile construct with plain SQL: a
generated column that `printf`s 10^8 characters per read (the probe's 16 KB file that took
2.1 GB and 57 s), a view or a trigger on a table the parser reads, a stored value over the
per-value cap, and one long string joined into many rows past `max_bytes`. Every one is
refused with a `ParseError` that names the table or column, before the expensive read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingest import ParseError, parse_file
from ingest.parsers._sqlite import MAX_VALUE_BYTES
from tests.ingest.nsys_files import NSYS, copy_of, edit

ROCPD = Path(__file__).resolve().parents[1] / "data" / "rocprof" / "4242_results.db"
ROCPD_SUFFIX = "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"
BOMB = "printf('%.*c', 100000000, 'x')"  # 100 MB per value read
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"

NSYS_CASES = [
    (
        "generated StringIds.value",
        [
            "ALTER TABLE StringIds RENAME TO StringIds0",
            f"CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT "
            f"GENERATED ALWAYS AS ({BOMB}) VIRTUAL)",
            "INSERT INTO StringIds (id) SELECT id FROM StringIds0",
        ],
        "column value of StringIds is a generated column",
        "StringIds.value",
    ),
    (
        "kernel table as a view",
        [f"ALTER TABLE {KERNEL} RENAME TO k0", f"CREATE VIEW {KERNEL} AS SELECT * FROM k0"],
        f"{KERNEL} is a view",
        KERNEL,
    ),
    (
        "trigger on StringIds",
        ["CREATE TRIGGER t AFTER INSERT ON StringIds BEGIN SELECT 1; END"],
        "table StringIds has a trigger (t)",
        "StringIds",
    ),
    (
        "value over the cap",
        [f"UPDATE StringIds SET value = printf('%.*c', {MAX_VALUE_BYTES + 1}, 'k') WHERE id = 44"],
        f"a value in the sqlite file is over the {MAX_VALUE_BYTES}-byte limit",
        f"reading {KERNEL}",
    ),
]


def _consume(path: Path, max_bytes: int = 1 << 30) -> None:
    for _ in parse_file(path, max_bytes=max_bytes).events:
        pass


@pytest.mark.parametrize(
    ("statements", "what", "where"), [c[1:] for c in NSYS_CASES], ids=[c[0] for c in NSYS_CASES]
)
def test_hostile_nsys_export_is_refused_where_it_is_hostile(
    tmp_path: Path, statements: list[str], what: str, where: str
) -> None:
    path = edit(copy_of(NSYS / "copies.sqlite", tmp_path), *statements)
    with pytest.raises(ParseError) as caught:
        _consume(path)
    assert what in str(caught.value)
    assert where in str(caught.value)


def test_a_long_name_joined_into_many_rows_stops_at_max_bytes(tmp_path: Path) -> None:
    """Six kernels share one 200 KB name: 1.2 MB of text materialised from a 0.5 MB file."""
    long_name = "printf('%.*c', 200000, 'k')"
    path = edit(
        copy_of(NSYS / "copies.sqlite", tmp_path), f"UPDATE StringIds SET value = {long_name} "
        "WHERE id = 44"
    )  # fmt: skip
    _consume(path, max_bytes=2_000_000)  # under the cap: read as before
    with pytest.raises(ParseError) as caught:
        _consume(path, max_bytes=1_000_000)
    assert "passes the 1000000-byte limit" in str(caught.value)
    assert KERNEL in str(caught.value)


def _rocpd_copy(tmp_path: Path, *statements: str) -> Path:
    path = tmp_path / "results.db"
    shutil.copyfile(ROCPD, path)
    return edit(path, *statements)


@pytest.mark.parametrize(
    ("statements", "what"),
    [
        pytest.param(
            [
                "DROP VIEW rocpd_string",
                f"CREATE VIEW rocpd_string AS SELECT id, guid, {BOMB} AS string "
                f"FROM rocpd_string_{ROCPD_SUFFIX}",
            ],
            "rocpd_string is a view",
            id="computing view",
        ),
        pytest.param(
            [
                f"ALTER TABLE rocpd_string_{ROCPD_SUFFIX} ADD COLUMN big TEXT "
                f"GENERATED ALWAYS AS ({BOMB}) VIRTUAL"
            ],
            f"column big of rocpd_string_{ROCPD_SUFFIX} is a generated column",
            id="generated column behind a plain view",
        ),
    ],
)
def test_hostile_rocpd_database_is_refused(
    tmp_path: Path, statements: list[str], what: str
) -> None:
    with pytest.raises(ParseError) as caught:
        _consume(_rocpd_copy(tmp_path, *statements))
    assert what in str(caught.value)


def test_rocpd_plain_views_are_still_read(tmp_path: Path) -> None:
    parsed = parse_file(_rocpd_copy(tmp_path))
    assert sum(1 for _ in parsed.events) > 0

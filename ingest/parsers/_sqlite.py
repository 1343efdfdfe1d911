"""Opening an uploaded SQLite database (an nsys export, a rocpd file) without trusting it.

A 16 KB file can declare `StringIds.value` as a generated column, `printf('%.*c', 1e8,
'x')`, and make every read build a 100 MB string (2.1 GB and 57 s in a probe); a view or a
trigger can hide the same. So every upload is opened read-only with a cap on the length of
any one value (`SQLITE_LIMIT_LENGTH`, which also stops `printf`, `replace` and friends),
and the tables a parser reads are checked first: stored columns only, no triggers, and
views only when a format defines them as a plain `SELECT * FROM <one table>` (rocpd does).

What the parsers then read is counted too (`TextBudget`): a value is at most
`MAX_VALUE_BYTES`, but a query that joins one such string into a million rows materialises
a terabyte, so the text events take from the database counts against `max_bytes`
(`PERFDASH_MAX_DECOMPRESSED_BYTES`), as decompressed bytes do for files.

The large tables of an nsys export are also read through ADBC into Arrow (`open_arrow`):
the same read-only URI, `query_only`, `trusted_schema = 0`, and no extension loading (the
driver enables it only when asked). ADBC cannot set `SQLITE_LIMIT_LENGTH`, so what it reads
must be integer columns only, or text whose length the reader checks itself
(`ingest.parsers._nsys_arrow`); strings by id still come through the capped sqlite3
connection, and the tables it reads are the ones `check_tables` checked.

Public surface: `open_upload`, `open_arrow`, `check_tables`, `TextBudget`, `MAX_VALUE_BYTES`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

import adbc_driver_sqlite.dbapi as adbc_sqlite
from adbc_driver_manager.dbapi import Connection as AdbcConnection

from ingest.errors import ParseError
from ingest.events import Event, EventBlock

MAX_VALUE_BYTES = 1 << 20  # one text or blob value; real kernel names are ~10 KB at most
_HIDDEN_GENERATED = (2, 3)  # PRAGMA table_xinfo: virtual and stored generated columns
_NAME = r'["`\[]?(\w+)["`\]]?'
_PLAIN_VIEW = re.compile(
    rf"CREATE\s+VIEW\s+{_NAME}\s+AS\s+SELECT\s+\*\s+FROM\s+{_NAME}\s*;?", re.IGNORECASE
)


def open_upload(path: Path, *, immutable: bool = False, timeout: float = 5.0) -> sqlite3.Connection:
    """A read-only connection whose values are capped at `MAX_VALUE_BYTES`.

    `immutable` also tells SQLite the file cannot change (no locking, no journal look-up),
    for formats that are never read while a profiler writes them.

    Raises:
        sqlite3.Error: the file cannot be opened (callers word it for their format).
    """
    conn = sqlite3.connect(
        _uri(path, immutable), uri=True, timeout=timeout, check_same_thread=False
    )
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.execute("PRAGMA query_only = 1")
        conn.execute("PRAGMA trusted_schema = 0")
    except BaseException:
        conn.close()
        raise
    return conn


def open_arrow(path: Path, *, immutable: bool = False, timeout: float = 5.0) -> AdbcConnection:
    """The same file through ADBC's SQLite driver (Arrow out), opened as `open_upload` opens it
    but without the cap on value lengths (see the module docstring).

    Raises:
        adbc_driver_manager.Error: the file cannot be opened.
    """
    conn = adbc_sqlite.connect(_uri(path, immutable))
    try:
        with conn.cursor() as cur:
            for pragma in (
                "query_only = 1",
                "trusted_schema = 0",
                f"busy_timeout = {timeout * 1000:.0f}",
            ):
                cur.execute(f"PRAGMA {pragma}")
    except BaseException:
        conn.close()
        raise
    return conn


def _uri(path: Path, immutable: bool) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro{'&immutable=1' if immutable else ''}"


def check_tables(
    conn: sqlite3.Connection, names: Iterable[str], source: str, *, views: bool = False
) -> None:
    """Refuse anything in the tables `names` that would compute rather than read a value.

    Args:
        names: the tables (or, with `views`, plain views) the parser will read.
        views: allow views of the form `SELECT * FROM <table>`; the table is checked too.

    Raises:
        ParseError: a generated column, a virtual table, a trigger on one of the tables, or
            a view (other than an allowed plain one); the location names it.
    """
    for name in names:
        row = conn.execute(
            "SELECT type, sql FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')",
            (name,),
        ).fetchone()
        if row is None:
            continue
        kind, sql = row
        if kind == "view":
            target = _plain_view_target(name, sql or "") if views else None
            if target is None:
                raise _refused(f"{name} is a view", source, name, "only stored tables are read")
            check_tables(conn, [target], source)
            continue
        _check_table(conn, name, sql or "", source)


def _plain_view_target(name: str, sql: str) -> str | None:
    match = _PLAIN_VIEW.fullmatch(sql.strip())
    if match is None or match.group(1) != name or not match.group(2).startswith(name):
        return None
    return match.group(2)


def _check_table(conn: sqlite3.Connection, name: str, sql: str, source: str) -> None:
    if sql.lstrip().upper().startswith("CREATE VIRTUAL"):
        raise _refused(f"{name} is a virtual table", source, name, "only stored tables are read")
    for _, column, *_rest, hidden in conn.execute(f'PRAGMA table_xinfo("{name}")'):
        if hidden in _HIDDEN_GENERATED:
            raise _refused(
                f"column {column} of {name} is a generated column",
                source,
                f"{name}.{column}",
                "only stored values are read",
            )
    trigger = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? LIMIT 1", (name,)
    ).fetchone()
    if trigger is not None:
        raise _refused(
            f"table {name} has a trigger ({trigger[0]})", source, name, "exports have none"
        )


def _refused(what: str, source: str, location: str, why: str) -> ParseError:
    return ParseError(
        f"{what}, which perfdash refuses in an uploaded database ({why})",
        source=source,
        location=location,
    )


class TextBudget:
    """Characters of text that events took from a database (names and string args), with
    a cap; `take` raises once the total passes it."""

    def __init__(self, max_bytes: int, source: str) -> None:
        self.max_bytes, self.source, self.used = max_bytes, source, 0

    def take(self, item: Event | EventBlock, table: str) -> None:
        """Count one event's or block's text (a block's names; its readers `add` the text
        their args took from the database).

        Raises:
            ParseError: the total passed `max_bytes`; the location names the table.
        """
        if isinstance(item, EventBlock):
            self.add(sum(map(len, item.name)), table)
            return
        used = len(item.name)
        if item.args:
            used += sum(len(v) for v in item.args.values() if type(v) is str)
        self.add(used, table)

    def add(self, chars: int, table: str) -> None:
        """Count `chars` characters of text read from `table`.

        Raises:
            ParseError: the total passed `max_bytes`; the location names the table.
        """
        self.used += chars
        if self.used > self.max_bytes:
            raise ParseError(
                f"the text read from the database passes the {self.max_bytes}-byte limit "
                "(setting PERFDASH_MAX_DECOMPRESSED_BYTES): long strings used by many rows",
                source=self.source,
                location=table,
            )

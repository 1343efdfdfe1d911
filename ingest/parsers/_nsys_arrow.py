"""The large activity tables of an Nsight Systems export read as Arrow columns (ADBC).

Kernels, copies, memsets, syncs, CUDA API calls and NVTX ranges are most rows of a large
export. Each is read through ADBC's SQLite driver in batches of `BLOCK_ROWS` rows of integer
columns (and NVTX's inline text, checked against the cap here), and each
batch becomes one `EventBlock` built column by column (`to_pylist`, numpy, `map`), with the
values and rules of the row readers in `_nsys_events`, which stay the reference and the
fallback:

- Strings by id come from `StringIds` through the capped sqlite3 connection, once per id
  (`Strings`), so no value passes `MAX_VALUE_BYTES` and a name shared by a million rows is
  read once. The text budget counts what rows took from the database once per row, as
  before: names, kernel short names, NVTX domain names (not the fixed labels the reader adds,
  such as a copy's kinds).
- SQLite types each value, the driver each column, from its first batch. When the first batch
  of a table does not read as the integer columns expected (a column of mixed types, a
  damaged page), the table is read row by row by `_nsys_events` instead, with its rules and
  errors, and the report says so; a later batch that does not is a ParseError naming the table
  (`Unreadable`, `WrongType`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import sub
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from adbc_driver_manager import Error as AdbcError
from adbc_driver_manager.dbapi import Connection as AdbcConnection
from adbc_driver_sqlite import StatementOptions

from ingest.events import Event, EventBlock, EventKind, ParseReport
from ingest.parsers import _nsys_events as tables
from ingest.parsers._sqlite import MAX_VALUE_BYTES, TextBudget

_IDS_PER_QUERY = 500  # bound parameters per StringIds look-up
_INTEGER_TYPES = (pa.int64(), pa.null())
_TEXT_TYPES = (pa.string(), pa.null())
_COLUMN_N = re.compile(r"column (\d+)")
_CLASSES = {k: {"api": v} for k, v in tables.RUNTIME_CLASSES.items()}  # shared, read-only


class Unreadable(Exception):
    """The driver could not read a batch (the message is SQLite's or Arrow's)."""


class WrongType(TypeError):
    """A column of a batch did not read as integers (SQLite types values, not columns)."""


class Strings:
    """`StringIds` values by id, read through the capped sqlite3 connection as blocks need
    them; an id with no row reads as None (the row readers' LEFT JOIN)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn, self._values = conn, dict[Any, Any]({None: None})

    def __call__(self, ids: Sequence[Any]) -> list[Any]:
        values = self._values
        missing = list(set(ids) - values.keys())
        for at in range(0, len(missing), _IDS_PER_QUERY):
            chunk = missing[at : at + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            values.update(
                self._conn.execute(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", chunk)
            )
        for key in missing:
            values.setdefault(key, None)
        return list(map(values.__getitem__, ids))


@dataclass(slots=True)
class Source:
    """What a table reader reads from and reports to."""

    conn: sqlite3.Connection
    arrow: AdbcConnection
    strings: Strings
    report: ParseReport
    budget: TextBudget


Items = Iterator[Event | EventBlock]


def read(
    src: Source, table: str, blocks: Iterator[EventBlock], fallback: Callable[[], Items]
) -> Items:
    """`blocks` (the Arrow reader of `table`), or `fallback` (its row reader) when the first
    batch does not read.

    Raises:
        Unreadable, WrongType: a batch after the first did not read.
    """
    try:
        first = next(blocks, None)
    except (Unreadable, WrongType) as e:
        tables.warn(src.report, f"{table} read row by row: its columns do not read as Arrow ({e})")
        yield from fallback()
        return
    if first is not None:
        yield first
        yield from blocks


def _batches(
    src: Source, sql: str, names: Sequence[str], text: Sequence[str] = ()
) -> Iterator[list[pa.Array]]:
    """The integer columns (`names`; those in `text` are text) of each batch of `sql`'s rows.

    A text value is checked against `MAX_VALUE_BYTES`, which the sqlite3 connection enforces
    and ADBC cannot (it was read, but once: a stored value, no larger than the file).

    Raises:
        WrongType: a column does not read as its type; Unreadable: the driver failed, or a
            text value is over `MAX_VALUE_BYTES`.
    """
    with src.arrow.cursor() as cur:
        try:
            cur.adbc_statement.set_options(**{StatementOptions.BATCH_ROWS.value: str(BLOCK_ROWS)})
            cur.execute(sql)
            for batch in cur.fetch_record_batch():
                for name, column in zip(names, batch.columns, strict=True):
                    wanted = _TEXT_TYPES if name in text else _INTEGER_TYPES
                    if column.type not in wanted:
                        raise WrongType(f"column {name} reads as {column.type}, not {wanted[0]}")
                    if name in text and _longest(column) > MAX_VALUE_BYTES:
                        raise Unreadable(f"string or blob too big in column {name}")
                yield batch.columns
        except (AdbcError, pa.ArrowException, OSError, UnicodeDecodeError) as e:
            text = _COLUMN_N.sub(lambda m: f"column {names[int(m.group(1))]}", str(e))
            raise (WrongType if "mismatch" in text else Unreadable)(text) from e


def _longest(column: pa.Array) -> int:
    """Bytes of the longest value of a text column."""
    if column.null_count == len(column):
        return 0
    return pc.max(pc.binary_length(column)).as_py()  # type: ignore[no-any-return]


def _ints(column: pa.Array) -> list[Any]:
    if column.null_count:
        return column.to_pylist()  # type: ignore[no-any-return]
    return column.to_numpy().tolist()  # type: ignore[no-any-return]


def _pids(gids: pa.Array) -> list[Any]:
    """`_nsys_events._pid` over a column."""
    if gids.null_count == len(gids):
        return [None] * len(gids)
    return _ints(pc.bit_wise_and(pc.shift_right(gids, 24), 0xFFFFFF))


def _tids(gids: pa.Array) -> list[Any]:
    """`_nsys_events._tid` over a column."""
    if gids.null_count == len(gids):
        return [None] * len(gids)
    return _ints(pc.bit_wise_and(gids, 0xFFFFFF))


def _select(alias: str, table: str, names: Sequence[str], cols: set[str], where: str = "") -> str:
    picked = ", ".join(f'{alias}."{c}"' if c in cols else "NULL" for c in names)
    return f"SELECT {picked} FROM {table} {alias}{where}"


BLOCK_ROWS = tables.BLOCK_ROWS
_KERNEL_COLUMNS = (
    "start", "end", "deviceId", "streamId", "demangledName", "shortName", "contextId",
    "correlationId", "globalPid", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
    "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "graphNodeId",
)  # fmt: skip


def kernels(src: Source, cols: set[str]) -> Items:
    """`_nsys_events.kernels` as blocks; the short names count against the text budget."""
    return read(
        src, tables.KERNEL, _kernel_blocks(src, cols), lambda: tables.kernels(src.conn, cols)
    )


def _kernel_blocks(src: Source, cols: set[str]) -> Iterator[EventBlock]:
    sql = _select("k", tables.KERNEL, _KERNEL_COLUMNS, cols)
    for batch in _batches(src, sql, _KERNEL_COLUMNS):
        start, end, device, stream, dem_ids, short_ids, ctx, corr = map(_ints, batch[:8])
        gpid = batch[8]
        gx, gy, gz, bx, by, bz, regs, static, dynamic, node = map(_ints, batch[9:])
        demangled = src.strings(dem_ids) if "demangledName" in cols else None
        short = src.strings(short_ids) if "shortName" in cols else None
        demangled = short if demangled is None else demangled
        assert demangled is not None  # `_prepare` requires one of the two columns
        short = demangled if short is None else short
        src.budget.add(sum(len(v) for v in short if type(v) is str), tables.KERNEL)
        args = [
            {
                "short name": s,
                "grid": [x, y, z],
                "block": [a, b, c],
                "registers per thread": r,
                "shared memory": (st or 0) + (dy or 0),
                "static shared memory": st,
                "dynamic shared memory": dy,
                "context": cx,
            }
            for s, x, y, z, a, b, c, r, st, dy, cx in zip(
                short, gx, gy, gz, bx, by, bz, regs, static, dynamic, ctx, strict=True
            )
        ]
        _add_nodes(args, node)
        yield EventBlock(
            kind=EventKind.KERNEL,
            name=[d or s or "" for d, s in zip(demangled, short, strict=True)],
            start_ns=start,
            dur_ns=list(map(sub, end, start)),
            device=device,
            stream=stream,
            pid=_pids(gpid),
            correlation=corr,
            args=args,
        )


def _add_nodes(args: list[dict[str, Any]], nodes: list[Any]) -> None:
    """``graph node id`` in the args of rows that have one (last key, as the row readers)."""
    if any(n is not None for n in nodes):
        for a, n in zip(args, nodes, strict=True):
            if n is not None:
                a["graph node id"] = n


def _bandwidth(size: Any, dur: Any) -> Any:
    return round(size / dur, 3) if dur > 0 else None


_MEMCPY_COLUMNS = (
    "start", "end", "deviceId", "streamId", "bytes", "copyKind", "srcKind", "dstKind",
    "contextId", "correlationId", "globalPid", "graphNodeId",
)  # fmt: skip


def memcpys(src: Source, cols: set[str]) -> Items:
    """`_nsys_events.memcpys` as blocks."""
    return read(
        src, tables.MEMCPY, _memcpy_blocks(src, cols), lambda: tables.memcpys(src.conn, cols)
    )


def _memcpy_blocks(src: Source, cols: set[str]) -> Iterator[EventBlock]:
    sql = _select("m", tables.MEMCPY, _MEMCPY_COLUMNS, cols)
    for batch in _batches(src, sql, _MEMCPY_COLUMNS):
        start, end, device, stream, size, kind, srck, dstk, ctx, corr = map(_ints, batch[:10])
        gpid, node = batch[10], _ints(batch[11])
        dur = list(map(sub, end, start))
        copy = [tables.COPY_KINDS.get(k, "Unknown") for k in kind]
        srcs = [tables.MEM_KINDS.get(k, "Unknown") for k in srck]
        dsts = [tables.MEM_KINDS.get(k, "Unknown") for k in dstk]
        args = [
            {
                "bytes": b,
                "copy kind": c,
                "src kind": s,
                "dst kind": d,
                "memory bandwidth (GB/s)": _bandwidth(b, t),
                "context": x,
            }
            for b, c, s, d, t, x in zip(size, copy, srcs, dsts, dur, ctx, strict=True)
        ]
        _add_nodes(args, node)
        yield EventBlock(
            kind=EventKind.MEMCPY,
            name=[f"Memcpy {c} ({s} -> {d})" for c, s, d in zip(copy, srcs, dsts, strict=True)],
            start_ns=start,
            dur_ns=dur,
            device=device,
            stream=stream,
            pid=_pids(gpid),
            correlation=corr,
            args=args,
        )


_MEMSET_COLUMNS = (
    "start", "end", "deviceId", "streamId", "bytes", "value", "memKind", "contextId",
    "correlationId", "globalPid", "graphNodeId",
)  # fmt: skip


def memsets(src: Source, cols: set[str]) -> Items:
    """`_nsys_events.memsets` as blocks."""
    return read(
        src, tables.MEMSET, _memset_blocks(src, cols), lambda: tables.memsets(src.conn, cols)
    )


def _memset_blocks(src: Source, cols: set[str]) -> Iterator[EventBlock]:
    sql = _select("m", tables.MEMSET, _MEMSET_COLUMNS, cols)
    for batch in _batches(src, sql, _MEMSET_COLUMNS):
        start, end, device, stream, size, value, kind, ctx, corr = map(_ints, batch[:9])
        gpid, node = batch[9], _ints(batch[10])
        dur = list(map(sub, end, start))
        mems = [tables.MEM_KINDS.get(k, "Device") for k in kind]
        args = [
            {
                "bytes": b,
                "value": v,
                "memory kind": m,
                "memory bandwidth (GB/s)": _bandwidth(b, t),
                "context": x,
            }
            for b, v, m, t, x in zip(size, value, mems, dur, ctx, strict=True)
        ]
        _add_nodes(args, node)
        yield EventBlock(
            kind=EventKind.MEMSET,
            name=[f"Memset ({m})" for m in mems],
            start_ns=start,
            dur_ns=dur,
            device=device,
            stream=stream,
            pid=_pids(gpid),
            correlation=corr,
            args=args,
        )


_SYNC_COLUMNS = (
    "start", "end", "deviceId", "streamId", "syncType", "contextId", "correlationId", "globalPid",
)  # fmt: skip


def syncs(src: Source, cols: set[str]) -> Items:
    """`_nsys_events.syncs` as blocks."""
    return read(src, tables.SYNC, _sync_blocks(src, cols), lambda: tables.syncs(src.conn, cols))


def _sync_blocks(src: Source, cols: set[str]) -> Iterator[EventBlock]:
    sql = _select("s", tables.SYNC, _SYNC_COLUMNS, cols)
    for batch in _batches(src, sql, _SYNC_COLUMNS):
        start, end, device, stream, kind, ctx, corr = map(_ints, batch[:7])
        gpid = batch[7]
        names = [tables.SYNC_TYPES.get(k, "Sync") for k in kind]
        yield EventBlock(
            kind=EventKind.SYNC,
            name=names,
            start_ns=start,
            dur_ns=list(map(sub, end, start)),
            device=device,
            stream=stream,
            pid=_pids(gpid),
            correlation=corr,
            args=[{"sync type": n, "context": x} for n, x in zip(names, ctx, strict=True)],
        )


_RUNTIME_COLUMNS = ("start", "end", "eventClass", "globalTid", "correlationId", "nameId")
_Row = tuple[Any, ...]


def runtime_calls(src: Source, cols: set[str]) -> Items:
    """`_nsys_events.runtime_calls` from Arrow batches: backtrace-class duplicates dropped,
    lone backtrace rows kept at the end."""
    return read(
        src,
        tables.RUNTIME,
        _runtime_blocks(src, cols),
        lambda: tables.runtime_calls(src.conn, cols, src.report),
    )


def _runtime_blocks(src: Source, cols: set[str]) -> Iterator[EventBlock]:
    where = ""
    backtraces: dict[tuple[Any, Any], _Row] = {}
    if "eventClass" in cols:
        sql = _select("r", tables.RUNTIME, _RUNTIME_COLUMNS, cols, " WHERE r.eventClass = ")
        for batch in _batches(src, f"{sql}{tables.BACKTRACE_CLASS}", _RUNTIME_COLUMNS):
            columns = [_ints(c) for c in batch]
            keys = zip(_pids(batch[3]), columns[4], strict=True)
            for key, row in zip(keys, zip(*columns, strict=True), strict=True):
                backtraces.setdefault(key, row)
        where = f" WHERE r.eventClass <> {tables.BACKTRACE_CLASS}"
    names: dict[Any, str] = {}
    sql = _select("r", tables.RUNTIME, _RUNTIME_COLUMNS, cols, where)
    for batch in _batches(src, sql, _RUNTIME_COLUMNS):
        yield _runtime_block(src, batch, names, backtraces)
    if backtraces:
        tables.warn(
            src.report, f"{len(backtraces)} CUDA backtrace rows had no runtime/driver row; kept"
        )
        columns = [pa.array(list(c), pa.int64()) for c in zip(*backtraces.values(), strict=True)]
        kept = pa.table(columns, names=_RUNTIME_COLUMNS)
        for batch in kept.to_batches(BLOCK_ROWS):
            yield _runtime_block(src, batch.columns, names, {})


def _runtime_block(
    src: Source,
    batch: Sequence[pa.Array],
    names: dict[Any, str],
    backtraces: dict[tuple[Any, Any], _Row],
) -> EventBlock:
    start, end, klass, corr, name_ids = map(_ints, (*batch[:3], *batch[4:]))
    gtid = batch[3]
    pids = _pids(gtid)
    if backtraces:
        for key in set(zip(pids, corr, strict=True)) & backtraces.keys():
            del backtraces[key]
    new = list(set(name_ids) - names.keys())
    for key, raw in zip(new, src.strings(new), strict=True):
        names[key] = tables.ABI_SUFFIX.sub("", str(raw or ""))
    return EventBlock(
        kind=EventKind.RUNTIME,
        name=list(map(names.__getitem__, name_ids)),
        start_ns=start,
        dur_ns=list(map(sub, end, start)),
        pid=pids,
        tid=_tids(gtid),
        correlation=corr,
        args=list(map(_CLASSES.get, klass)),
    )


_NVTX_COLUMNS = ("start", "end", "eventType", "globalTid", "domainId", "textId", "text")
_STYLES = {k: {"style": v} for k, v in tables.NVTX_STYLES.items()}  # shared, read-only


def nvtx_ranges(src: Source, cols: set[str]) -> Items:
    """`_nsys_events.nvtx_ranges` as blocks; domain names count against the text budget."""
    return read(
        src,
        tables.NVTX,
        _nvtx_blocks(src, cols),
        lambda: tables.nvtx_ranges(src.conn, cols, src.report),
    )


def _nvtx_blocks(src: Source, cols: set[str]) -> Iterator[EventBlock]:
    domains = tables.nvtx_domains(src.conn, cols)
    styles = ", ".join(str(k) for k in tables.NVTX_STYLES)
    sql = _select("n", tables.NVTX, _NVTX_COLUMNS, cols, f" WHERE n.eventType IN ({styles})")
    for batch in _batches(src, sql, _NVTX_COLUMNS, text=("text",)):
        start, end, kind, domain, text_ids = map(_ints, (*batch[:3], *batch[4:6]))
        texts = batch[6].to_pylist()
        if batch[6].null_count:
            wanted = [i for t, i in zip(texts, text_ids, strict=True) if t is None]
            looked_up = iter(src.strings(wanted))
            texts = [next(looked_up) if t is None else t for t in texts]
        names = [str(t or "") for t in texts]
        gtid = batch[3]
        pids, tids = _pids(gtid), _tids(gtid)
        if None in end:
            keep = _ended(start, end, kind, names, src.report)
            start, end, kind, domain, names, pids, tids = (
                [c[i] for i in keep] for c in (start, end, kind, domain, names, pids, tids)
            )
        args: list[dict[str, Any]] = list(map(_STYLES.__getitem__, kind))
        if any(domain):
            args = [
                {**a, "domain": domains.get(d, str(d))} if d else a
                for a, d in zip(args, domain, strict=True)
            ]
            src.budget.add(sum(len(a["domain"]) for a in args if "domain" in a), tables.NVTX)
        yield EventBlock(
            kind=EventKind.ANNOTATION,
            name=names,
            start_ns=start,
            dur_ns=[(e if e is not None else s) - s for s, e in zip(start, end, strict=True)],
            pid=pids,
            tid=tids,
            args=args,
        )


def _ended(
    start: list[Any], end: list[Any], kind: list[Any], names: list[str], report: ParseReport
) -> list[int]:
    """Rows to keep: marks, and ranges that ended (the others are skipped and counted)."""
    keep = []
    for i, (s, e, k) in enumerate(zip(start, end, kind, strict=True)):
        if e is None and tables.NVTX_STYLES[k] != "Mark":
            report.skip(f"{tables.NVTX}: NVTX range {names[i]!r} at {s} ns has no end")
        else:
            keep.append(i)
    return keep

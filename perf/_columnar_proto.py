"""A throwaway columnar ingest of a Kineto trace, measured by `bench_columnar_floor.py`.

Not product code: it reads only the layout torch.profiler writes (`traceEvents` within the
first MB, one gzip member, keys after the array allowed) and fails loudly on anything else.
It is the shape issue #17 asks for, measured before it is built:

- `gunzip`: inflate the file in chunks with stdlib `zlib` or `isal`, keeping nothing.
- `decode`: the floor: isal gunzip plus a typed `msgspec` decode of only the fields an
  ingest uses, in pieces of about `PIECE_BYTES`, so memory stays flat.
- `parquet`: the floor, then Arrow columns of the events perfdash stores (same categories,
  same exact-ns rule), one zstd Parquet file (events, sorted by kind and start) plus one for
  flows, and a DuckDB kernel top-10 over the events file.
- `parquet-streamed`: the same, but each row group is sorted and written as soon as its
  rows are decoded, so memory stays flat (row groups then overlap in time).
- `verify` (untimed): the Parquet rows against perfdash's own parser, event by event.

Exact nanoseconds: `ts` is decoded as a float64 by msgspec (C, correctly rounded), then
turned into integer ns over whole columns with perfdash's rule (`_float_us_to_ns`): the
nearest integer of ts*1000, or its neighbour whose /1000 gives back the same float. That is
exact below 2**43 µs; a piece holding a larger |ts| stops the run (perfdash re-decodes such
pieces with `ts` quoted; the prototype does not). No Decimal anywhere.

Run as a child: `python perf/_columnar_proto.py MODE FILE [OUT]`; the last stdout line is JSON.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ingest.parsers.kineto import CATEGORY_KINDS, DEVICE_KINDS, KEPT_ARGS  # noqa: E402

PIECE_BYTES = 4 << 20  # decompressed bytes per decoded piece
READ_BYTES = 256 << 10  # compressed bytes per read (~5 MB inflated for a Kineto trace)
EXACT_FLOAT_LIMIT = float(2**43)
ROW_GROUP_ROWS = 64 * 1024

# Kept args as raw JSON slices: nothing nested (Input Dims) becomes Python objects; the
# encoder copies the slices back verbatim. correlation/device/stream become columns.
_ARG_FIELDS = {f"a{i}": key for i, key in enumerate(sorted(KEPT_ARGS))}
KeptArgs = msgspec.defstruct(
    "KeptArgs",
    [(field, Raw | UnsetType, UNSET) for field in _ARG_FIELDS]
    + [
        ("correlation", int | UnsetType, UNSET),
        ("device", int | str | UnsetType, UNSET),
        ("stream", int | str | UnsetType, UNSET),
    ],
    rename=_ARG_FIELDS,
    omit_defaults=True,
    gc=False,
)


class KinetoEvent(msgspec.Struct, gc=False):
    """The fields of one `traceEvents` element that an ingest reads; the rest is skipped."""

    ph: str = ""
    cat: str | None = None
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    id: int | str | None = None  # flows
    bp: str | None = None  # flows
    args: KeptArgs | None = None  # type: ignore[valid-type]


class KinetoHead(msgspec.Struct, gc=False):
    """The top-level keys an ingest needs (before or after the array)."""

    baseTimeNanoseconds: int | None = None  # the file's key


_EVENTS = msgspec.json.Decoder(list[KinetoEvent])
_HEAD = msgspec.json.Decoder(KinetoHead)
_ENCODE = msgspec.json.Encoder().encode


def inflated_chunks(path: Path, lib: str) -> Iterator[bytes]:
    """Decompressed chunks of a one-member gzip file."""
    inflater: Any
    if lib == "isal":
        from isal import isal_zlib

        inflater = isal_zlib.decompressobj(31)
    else:
        inflater = zlib.decompressobj(31)
    with path.open("rb") as f:
        while data := f.read(READ_BYTES):
            if out := inflater.decompress(data):
                yield out
    if tail := inflater.flush():
        yield tail


def pieces(chunks: Iterator[bytes]) -> tuple[KinetoHead, Iterator[list[KinetoEvent]]]:
    """The head keys and the `traceEvents` array decoded piece by piece."""
    buf = b""
    marker = b'"traceEvents"'
    while (found := buf.find(marker)) < 0:
        if len(buf) > 1 << 20:
            raise SystemExit("traceEvents not within the first MB: not handled by the prototype")
        buf += next(chunks)
    opening = buf.index(b"[", found) + 1
    head = _HEAD.decode(buf[:found].rstrip().rstrip(b",") + b"}")
    return head, _decode_pieces(buf[opening:], chunks, head)


def _decode_pieces(
    window: bytes, chunks: Iterator[bytes], head: KinetoHead
) -> Iterator[list[KinetoEvent]]:
    eof = False
    while True:
        while not eof and len(window) < PIECE_BYTES:
            nxt = next(chunks, None)
            if nxt is None:
                eof = True
            else:
                window += nxt
        if eof:
            piece, rest = _close_array(window)
            if head.baseTimeNanoseconds is None:
                head.baseTimeNanoseconds = _HEAD.decode(b"{" + rest).baseTimeNanoseconds
            yield _EVENTS.decode(b"[" + piece + b"]")
            return
        cut = len(window)
        for _ in range(8):  # a `},` inside an event cannot decode: back off to the previous one
            cut = window.rfind(b"},", 0, cut)
            if cut < 0:
                raise SystemExit("no event boundary in a piece: not handled by the prototype")
            try:
                items = _EVENTS.decode(b"[" + window[: cut + 1] + b"]")
            except msgspec.DecodeError:
                continue
            break
        else:
            raise SystemExit("no decodable piece: not handled by the prototype")
        yield items
        window = window[cut + 2 :]


def _close_array(window: bytes) -> tuple[bytes, bytes]:
    """Split the last window at the `]` that closes the array: (events, keys after it)."""
    idx = len(window)
    while (idx := window.rfind(b"]", 0, idx)) >= 0:
        rest = window[idx + 1 :].strip()
        if rest == b"}":
            return window[:idx], b"}"
        if rest.startswith(b","):
            try:
                msgspec.json.decode(b"{" + rest[1:])
            except msgspec.DecodeError:
                continue
            return window[:idx], rest[1:]
    raise SystemExit("the traceEvents array does not end: not handled by the prototype")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_gunzip(path: Path, lib: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    size = sum(len(c) for c in inflated_chunks(path, lib))
    return {"seconds": time.perf_counter() - t0, "json_bytes": size, "rss_mb": _rss_mb()}


def run_decode(path: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    _, events = pieces(inflated_chunks(path, "isal"))
    total = sum(len(items) for items in events)
    return {"seconds": time.perf_counter() - t0, "json_events": total, "rss_mb": _rss_mb()}


# ---------------------------------------------------------------- columns and Parquet


def _as_int(value: object) -> int | None:
    """perfdash's best-effort id (`"stream 7"` -> 7); ints pass straight through."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value.strip().split(" ")[-1], 0)
        except ValueError:
            return None
    return None


KIND_OF = {cat: kind.value for cat, kind in CATEGORY_KINDS.items()}
DEVICE_KIND_VALUES = frozenset(k.value for k in DEVICE_KINDS)


EVENT_FIELDS = (
    "kind",
    "name",
    "ts",
    "dur",
    "device",
    "stream",
    "pid",
    "tid",
    "correlation",
    "args",
)
FLOW_FIELDS = ("ph", "id", "cat", "pid", "tid", "ts", "bp")


def _columns(items: list[KinetoEvent]) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """One pass over a decoded piece: the stored events' columns and the flows' columns.

    The one per-event Python loop of the prototype (typed attribute reads and appends); the
    time conversion and everything after it work on whole columns.
    """
    kind_of, device_kinds, unset, encode = KIND_OF, DEVICE_KIND_VALUES, UNSET, _ENCODE
    events: dict[str, list[Any]] = {f: [] for f in EVENT_FIELDS}
    flows: dict[str, list[Any]] = {f: [] for f in FLOW_FIELDS}
    kind, name, ts, dur, device, stream, pid, tid, corr, args = events.values()
    f_ph, f_id, f_cat, f_pid, f_tid, f_ts, f_bp = flows.values()
    dv: Any
    st: Any
    for e in items:
        k = kind_of.get(e.cat)  # type: ignore[arg-type]
        if k is None:
            if e.ph in ("s", "f"):
                f_ph.append(e.ph)
                f_id.append(_as_int(e.id))
                f_cat.append(e.cat)
                f_pid.append(_as_int(e.pid))
                f_tid.append(_as_int(e.tid))
                f_ts.append(e.ts)
                f_bp.append(e.bp)
                continue
            if e.name != "[memory]":  # 2021 traces: memory instants had no cat
                continue
            k = "memory"
        kind.append(k)
        name.append(e.name)
        ts.append(e.ts)
        dur.append(e.dur if e.dur is not None or k != "memory" else 0.0)
        a: Any = e.args
        if a is None:
            c, dv, st = None, unset, unset
            args.append(None)
        else:
            c, dv, st = a.correlation, a.device, a.stream
            a.correlation = a.device = a.stream = unset
            text = encode(a)
            args.append(None if text == b"{}" else text)
            c = None if c is unset else c
        if k in device_kinds:
            device.append(_as_int(e.pid if dv is unset else dv))
            stream.append(_as_int(e.tid if st is unset else st))
            pid.append(None)
            tid.append(None)
        else:
            device.append(None)
            stream.append(None)
            pid.append(_as_int(e.pid))
            tid.append(_as_int(e.tid))
        corr.append(c)
    return events, flows


def us_to_ns(values: Any) -> Any:
    """float64 µs column -> exact int64 ns column (perfdash's `_float_us_to_ns`, vectorised)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    largest = pc.max(pc.abs(values)).as_py()
    if largest is not None and largest >= EXACT_FLOAT_LIMIT:
        raise SystemExit("a ts at or above 2**43 µs: the prototype does not quote ts")
    ns = pc.cast(pc.round(pc.multiply(values, 1000.0)), pa.int64())
    wrong = pc.not_equal(pc.divide(pc.cast(ns, pa.float64()), 1000.0), values)
    if pc.any(wrong).as_py():  # rare: pick the neighbour whose decimal text gives the float
        fixed = ns.to_pylist()
        for i in pc.indices_nonzero(wrong).to_pylist():
            for candidate in (fixed[i] - 1, fixed[i] + 1):
                if candidate / 1000 == values[i].as_py():
                    fixed[i] = candidate
        ns = pa.array(fixed, pa.int64())
    return ns


def _event_batch(cols: dict[str, list[Any]], rank: int | None) -> Any:
    import pyarrow as pa

    ts = pa.array(cols["ts"], pa.float64())
    dur = pa.array(cols["dur"], pa.float64())
    n = len(ts)
    return pa.table(
        {
            "kind": pa.array(cols["kind"], pa.string()),
            "name": pa.array(cols["name"], pa.string()),
            "start_ns": us_to_ns(ts),
            "dur_ns": us_to_ns(dur),
            "rank": pa.nulls(n, pa.int32()) if rank is None else pa.repeat(rank, n),
            "device": pa.array(cols["device"], pa.int32()),
            "stream": pa.array(cols["stream"], pa.int64()),
            "pid": pa.array(cols["pid"], pa.int64()),
            "tid": pa.array(cols["tid"], pa.int64()),
            "correlation": pa.array(cols["correlation"], pa.int64()),
            "args": pa.array(cols["args"], pa.binary()).cast(pa.string()),
        }
    )


def _flow_batch(cols: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "ph": pa.array(cols["ph"], pa.string()),
            "id": pa.array(cols["id"], pa.int64()),
            "cat": pa.array(cols["cat"], pa.string()),
            "pid": pa.array(cols["pid"], pa.int64()),
            "tid": pa.array(cols["tid"], pa.int64()),
            "ts_ns": us_to_ns(pa.array(cols["ts"], pa.float64())),
            "bp": pa.array(cols["bp"], pa.string()),
        }
    )


EVENT_INTS = ["start_ns", "dur_ns", "rank", "device", "stream", "pid", "tid", "correlation"]
FLOW_INTS = ["id", "pid", "tid", "ts_ns"]
DELTA_COLUMNS = frozenset({"start_ns", "correlation", "id", "ts_ns"})  # sorted or nearly
DELTA = "DELTA_BINARY_PACKED"


class ParquetOut:
    """Arrow tables in, one Parquet file out: each `write` is sorted by `sort`, then cut into
    row groups of up to `ROW_GROUP_ROWS`. Strings dictionary-encoded, start times and ids
    delta-encoded, other integers plain; zstd at Arrow's default level."""

    def __init__(self, path: Path, sort: list[str], ints: list[str]) -> None:
        self.path, self.sort, self.ints = path, [(c, "ascending") for c in sort], ints
        self.writer: Any = None
        self.rows = 0

    def write(self, table: Any, one_group: bool = False) -> None:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = table.take(pc.sort_indices(table, self.sort))
        if self.writer is None:
            self.writer = pq.ParquetWriter(
                self.path,
                table.schema,
                compression="zstd",
                use_dictionary=[c for c in table.column_names if c not in self.ints],
                column_encoding=dict.fromkeys(
                    DELTA_COLUMNS & set(self.ints), "DELTA_BINARY_PACKED"
                ),
                write_statistics=True,
            )
        self.writer.write_table(
            table, row_group_size=table.num_rows if one_group else ROW_GROUP_ROWS
        )
        self.rows += table.num_rows

    def close(self) -> None:
        self.writer.close()


def _with_base(table: Any, column: str, base: int) -> Any:
    import pyarrow.compute as pc

    i = table.column_names.index(column)
    return table.set_column(i, column, pc.add(table[column], base)) if base else table


KERNEL_TOP10 = """
SELECT name, count(*) AS count, sum(dur_ns)::BIGINT AS total_ns,
       (sum(dur_ns) // count(*))::BIGINT AS mean_ns, min(dur_ns) AS min_ns,
       max(dur_ns) AS max_ns, floor(median(dur_ns))::BIGINT AS p50_ns,
       quantile_disc(dur_ns, 0.95) AS p95_ns
FROM read_parquet(?) WHERE kind = 'kernel'
GROUP BY name ORDER BY total_ns DESC, name LIMIT 10
"""


def run_parquet(path: Path, out: Path, streamed: bool) -> dict[str, Any]:
    """Decode, build columns per piece, write Parquet, then the DuckDB kernel top-10.

    Sorted (`streamed` False): every piece's columns are kept, concatenated and sorted by
    (kind, start_ns) over the whole trace, so row groups never overlap in time within a kind;
    memory grows with the trace. Streamed: pieces are gathered up to one row group, sorted
    within it and written as one row group (64k rows and up to one piece more), so memory
    stays flat; row groups of one kind then overlap in time.
    """
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    head, decoded = pieces(inflated_chunks(path, "isal"))
    events_out = ParquetOut(out / "events.parquet", ["kind", "start_ns"], EVENT_INTS)
    flows_out = ParquetOut(out / "flows.parquet", ["id", "ph"], FLOW_INTS)
    event_batches: list[Any] = []
    flow_batches: list[Any] = []
    buffered = json_events = 0
    write_seconds = 0.0

    def flush() -> None:
        nonlocal buffered, write_seconds
        base = head.baseTimeNanoseconds or 0
        t = time.perf_counter()
        events = _with_base(pa.concat_tables(event_batches), "start_ns", base)
        events_out.write(events, one_group=streamed)
        flows_out.write(_with_base(pa.concat_tables(flow_batches), "ts_ns", base), streamed)
        write_seconds += time.perf_counter() - t
        event_batches.clear()
        flow_batches.clear()
        buffered = 0

    for items in decoded:  # each piece becomes Arrow at once: no Python lists are kept
        json_events += len(items)
        ev, fl = _columns(items)
        event_batches.append(_event_batch(ev, None))
        flow_batches.append(_flow_batch(fl))
        buffered += event_batches[-1].num_rows
        if streamed and buffered >= ROW_GROUP_ROWS:
            if head.baseTimeNanoseconds is None:
                raise SystemExit("streamed: baseTimeNanoseconds not in the head: not handled")
            flush()
    if event_batches:
        flush()  # sorted: the whole trace (its base may come after the array)
    events_out.close()
    flows_out.close()
    t_written = time.perf_counter()
    con = duckdb.connect()
    top10 = con.execute(KERNEL_TOP10, [str(out / "events.parquet")]).fetchall()
    t_query = time.perf_counter()
    meta = pq.ParquetFile(out / "events.parquet").metadata
    column_bytes: dict[str, int] = {}
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            column_bytes[col.path_in_schema] = (
                column_bytes.get(col.path_in_schema, 0) + col.total_compressed_size
            )
    fields = ["name", "count", "total_ns", "mean_ns", "min_ns", "max_ns", "p50_ns", "p95_ns"]
    return {
        "seconds": t_query - t0,
        "arrow_seconds": t_written - t0 - write_seconds,
        "write_seconds": write_seconds,
        "query_seconds": t_query - t_written,
        "json_events": json_events,
        "events": events_out.rows,
        "flows": flows_out.rows,
        "events_bytes": (out / "events.parquet").stat().st_size,
        "flows_bytes": (out / "flows.parquet").stat().st_size,
        "row_groups": meta.num_row_groups,
        "column_bytes": column_bytes,
        "kinds": dict(
            con.execute(
                "SELECT kind::VARCHAR, count(*) FROM read_parquet(?) GROUP BY 1",
                [str(out / "events.parquet")],
            ).fetchall()
        ),
        "top10": [dict(zip(fields, row, strict=True)) for row in top10],
        "rss_mb": _rss_mb(),
    }


# ---------------------------------------------------------------- the untimed cross-check


def run_verify(path: Path, parquet: Path) -> dict[str, Any]:
    """Every stored row against perfdash's parser: the same multiset of events, args compared
    as parsed JSON (key order and number formatting may differ, values may not)."""
    from collections import Counter

    import pyarrow.parquet as pq

    from ingest import parse_file

    def key(row: tuple[Any, ...], args: dict[str, Any] | None) -> tuple[Any, ...]:
        return (*row, json.dumps(args, sort_keys=True) if args else None)

    ours: Counter[tuple[Any, ...]] = Counter()
    cols = ["kind", "name", "start_ns", "dur_ns", "device", "stream", "pid", "tid", "correlation"]
    table = pq.read_table(parquet)
    for rec in table.to_pylist():
        args = json.loads(rec["args"]) if rec["args"] else None
        ours[key(tuple(rec[c] for c in cols), args)] += 1
    theirs: Counter[tuple[Any, ...]] = Counter()
    for e in parse_file(path).events:
        row = (e.kind.value, e.name, e.start_ns, e.dur_ns, e.device, e.stream, e.pid, e.tid)
        theirs[key((*row, e.correlation), e.args)] += 1
    only_ours, only_theirs = ours - theirs, theirs - ours
    return {
        "rows": table.num_rows,
        "perfdash_rows": sum(theirs.values()),
        "only_prototype": sum(only_ours.values()),
        "only_perfdash": sum(only_theirs.values()),
        "example": repr(next(iter(only_ours or only_theirs), None))[:300],
    }


def main() -> None:
    mode, path = sys.argv[1], Path(sys.argv[2])
    if mode == "gunzip":
        result = run_gunzip(path, sys.argv[3])
    elif mode == "decode":
        result = run_decode(path)
    elif mode in ("parquet", "parquet-streamed"):
        result = run_parquet(path, Path(sys.argv[3]), streamed=mode == "parquet-streamed")
    elif mode == "verify":
        result = run_verify(path, Path(sys.argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""The typed Kineto decode (msgspec structs) against the generic one (orjson dicts and the
per-dict conversion, the parser before issue #17): the same events, header, skips and
errors on every Kineto file of the repository and the corpus and on damaged copies; the
inputs where the typed decode must step aside; and what changed on purpose."""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest import IngestError, ParseError, parse_file
from ingest import _io as io_module
from ingest.parsers import _json_stream, _kineto_typed, kineto
from ingest.parsers._json_stream import decode_generic
from ingest.parsers._kineto_typed import ARG_DEPTH, KinetoEvent
from tests.ingest.kineto_files import DATA, kineto_files, mutant


def _outcome(path: Path) -> dict[str, Any]:
    """Everything a parse shows: events as reprs (args as ordered items) in a list per kind,
    header, report, error. Per kind: the kinds interleave block by block, where the pieces
    happen to end; each kind's order is the file's."""
    events: dict[str, list[str]] = {}
    header = report = error = None
    try:
        parsed = parse_file(path)
        header, report = repr(parsed.header), parsed.report
        for e in parsed.events:
            args = None if e.args is None else list(e.args.items())
            fields = (e.kind, e.name, e.start_ns, e.dur_ns, e.device, e.stream, e.pid, e.tid)
            events.setdefault(e.kind, []).append(repr((*fields, e.correlation, args, e.rank)))
    except IngestError as e:
        error = (type(e).__name__, str(e))
    seen = None if report is None else (report.skipped, report.warnings, report.bytes_done)
    return {"events": events, "header": header, "report": seen, "error": error}


_TYPED = _kineto_typed.decode_piece


class _Spy:
    """`decode_piece` that counts the pieces it returned typed."""

    def __init__(self) -> None:
        self.typed = 0

    def __call__(self, piece: bytes) -> list[Any] | None:
        items = _TYPED(piece)
        if items and type(items[0]) is KinetoEvent:
            self.typed += 1
        return items


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], ...]:
    """(typed outcome, generic outcome, typed pieces)."""
    spy = _Spy()
    with monkeypatch.context() as m:
        m.setattr(kineto, "decode_piece", spy)
        typed = _outcome(path)
    with monkeypatch.context() as m:
        m.setattr(kineto, "decode_piece", decode_generic)
        generic = _outcome(path)
    return typed, generic, {"typed_pieces": spy.typed}


@pytest.mark.parametrize("path", kineto_files(), ids=lambda p: p.name)
def test_every_kineto_file_gives_the_generic_paths_events(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    typed, generic, spy = _both(path, monkeypatch)
    assert typed == generic
    if typed["events"]:
        assert spy["typed_pieces"] > 0, "the typed decode was never used"


def test_damaged_copies_give_the_generic_paths_events_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Truncations, flipped bytes and retyped values: same events, skips, errors."""
    text = gzip.decompress((DATA / "torch" / "h200_train_step.pt.trace.json.gz").read_bytes())
    doc = json.loads(text)
    rng = random.Random(17)
    outcomes = {"events": 0, "skips": 0, "errors": 0}
    for i in range(150):
        path = tmp_path / f"m{i}.json"
        path.write_bytes(mutant(rng, text, doc))
        typed, generic, _ = _both(path, monkeypatch)
        assert typed == generic, path.name
        outcomes["events"] += sum(map(len, typed["events"].values()))
        outcomes["skips"] += bool(typed["report"] and typed["report"][0])
        outcomes["errors"] += typed["error"] is not None
    assert all(n > 10 for n in outcomes.values()), outcomes  # every path was exercised


# --- where the typed decode steps aside, and what it reads ---------------------------------


def _trace(tmp_path: Path, events: list[dict[str, Any]] | bytes, name: str = "t.json") -> Path:
    body = events if isinstance(events, bytes) else ",\n".join(map(json.dumps, events)).encode()
    path = tmp_path / name
    path.write_bytes(b'{"schemaVersion": 1, "traceEvents": [\n' + body + b"\n]}")
    return path


def _kernel(i: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10 + i,
            "dur": 1.5, "args": {"correlation": i, "device": 0, "stream": 7, **args}}  # fmt: skip


def test_integers_beyond_int64_read_as_orjson_reads_them(tmp_path: Path) -> None:
    """orjson reads integers past 64 bits as floats, msgspec as exact ints: such pieces go
    the generic way, so the stored args stay what they were (and stay serialisable)."""
    big, u64 = 123456789012345678901234567890, 2**63
    path = _trace(tmp_path, [_kernel(0, grid=big), _kernel(1, grid=u64), _kernel(2, grid=[1])])
    grids = [(e.args or {})["grid"] for e in parse_file(path).events]
    assert grids == [float(big), u64, [1]]
    assert type(grids[0]) is float


def test_deeply_nested_args_are_kept_whole(tmp_path: Path) -> None:
    nested: Any = 1
    for _ in range(ARG_DEPTH + 3):
        nested = [nested]
    (event,) = parse_file(_trace(tmp_path, [_kernel(0, **{"Input Dims": nested})])).events
    assert event.args == {"Input Dims": nested}


def test_text_that_is_not_utf8_fails_at_its_first_bad_byte(tmp_path: Path) -> None:
    """Also in a field perfdash never reads (msgspec does not check those strings)."""
    body = ",\n".join(json.dumps(_kernel(i, note="ok")) for i in range(300)).encode()
    bad = body.replace(b'"ok"', b'"o\xffk"', 1)
    path = _trace(tmp_path, bad)
    with pytest.raises(ParseError, match="invalid JSON") as info:
        list(parse_file(path).events)
    assert info.value.offset == path.read_bytes().index(b"\xff")


def test_a_lone_large_float_time_is_exact(tmp_path: Path) -> None:
    """A float ts at or above 2**43 µs quotes its whole piece, wherever it sits: the old
    reader looked at every 16th element only and rounded a lone one through a float."""
    events = [{**_kernel(i), "ts": 1000 + i} for i in range(40)]
    events[5]["ts"] = "@TS@"
    text = json.dumps({"traceEvents": events}).replace('"@TS@"', "9876543210123.457")
    path = tmp_path / "t.json"
    path.write_text(text)
    starts = [e.start_ns for e in parse_file(path).events]
    assert starts[5] == 9876543210123457
    assert starts[:5] == [1_000_000 + i * 1000 for i in range(5)]


def test_a_huge_number_in_a_field_nobody_reads_no_longer_fails(tmp_path: Path) -> None:
    """The one leniency: orjson refuses numbers beyond the float range anywhere; msgspec
    skips the fields perfdash does not read without converting them."""
    path = _trace(tmp_path, b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, '
                  b'"unread": 1e400}')  # fmt: skip
    (event,) = parse_file(path).events
    assert (event.start_ns, event.dur_ns) == (1000, 2000)


# --- pieces follow the bytes, not the decompressor ----------------------------------------


def _chunked(chunk_size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(io_module.ByteStream.__init__, "__kwdefaults__", {"chunk_size": chunk_size})


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_where_a_damaged_trace_stops_does_not_depend_on_the_chunking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    text = _trace(tmp_path, [_kernel(i) for i in range(5000)]).read_bytes()
    cut = text[: len(text) * 2 // 3]
    path = tmp_path / name
    path.write_bytes(gzip.compress(cut) if name.endswith(".gz") else cut)
    seen = set()
    for chunk_size in (4096, 65536, 1 << 22):
        _chunked(chunk_size, monkeypatch)
        outcome = _outcome(path)
        assert outcome["error"] is not None
        seen.add(repr((outcome["error"], sum(map(len, outcome["events"].values())))))
    assert len(seen) == 1, seen


def _corrupt_gzip(tmp_path: Path) -> Path:
    data = bytearray(
        gzip.compress(_trace(tmp_path, [_kernel(i) for i in range(20000)]).read_bytes())
    )
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    path = tmp_path / "bad.json.gz"
    path.write_bytes(bytes(data))
    return path


def _error(path: Path, **kwargs: Any) -> str:
    with pytest.raises(ParseError) as info:
        list(parse_file(path, **kwargs).events)
    return str(info.value)


def test_gzip_failures_are_reported_as_zlib_reports_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """isal inflates; a corrupt, cut or oversized stream is reported by a zlib pass, so the
    message and offset are zlib's (what perfdash said before isal)."""
    assert io_module.isal_zlib is not None, "isal is a dependency"
    corrupt = _corrupt_gzip(tmp_path)
    whole = gzip.compress(_trace(tmp_path, [_kernel(i) for i in range(20000)]).read_bytes())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (16 << 20) + b"]}"))
    cases: list[tuple[Path, dict[str, Any]]] = [
        (corrupt, {}),
        (cut, {}),
        (bomb, {"max_bytes": 5_000_000}),
    ]
    with_isal = [_error(path, **kw) for path, kw in cases]
    monkeypatch.setattr(io_module, "isal_zlib", None)
    assert with_isal == [_error(path, **kw) for path, kw in cases]
    assert "while decompressing data" in with_isal[0]  # zlib's wording, not isal's
    with pytest.raises(zlib.error):
        zlib.decompress(corrupt.read_bytes(), zlib.MAX_WBITS | 16)


def test_isal_and_zlib_give_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / "torch" / "h200_gpt_small.pt.trace.json.gz"

    def read() -> Iterator[bytes]:
        return io_module.ByteStream(path, max_bytes=1 << 30, source="x").chunks()

    with_isal = b"".join(read())
    monkeypatch.setattr(io_module, "isal_zlib", None)
    assert with_isal == b"".join(read()) == gzip.decompress(path.read_bytes())


def test_small_pieces_give_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / "torch" / "h200_gpt_small.pt.trace.json.gz"
    expected = _outcome(path)
    monkeypatch.setattr(_json_stream, "PIECE_BYTES", 1500)  # smaller than many events
    assert _outcome(path) == expected


def test_a_category_that_is_not_a_string_is_no_category(tmp_path: Path) -> None:
    """It crashed the parser (an unhashable dict key) before; now it is an unknown one."""
    odd = {**_kernel(0), "cat": ["kernel"]}
    events = list(parse_file(_trace(tmp_path, [odd, _kernel(1)])).events)
    assert [e.correlation for e in events] == [1]

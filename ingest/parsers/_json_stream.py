"""Stream the big array of a Chrome-trace JSON file in chunks, with orjson, in bounded memory.

Why not one `orjson.loads`: a 2 GB trace would need ~10x its size in Python objects. Why not
a pure-Python incremental JSON parser: it is 20-50x slower than orjson. The middle way used
here: take `PIECE_BYTES` of the array, cut at the last `}` `,` `{` boundary, and hand `[` +
piece + `]` to a decoder (the caller's, or `decode_generic`: orjson). A cut that falls
inside a string or a nested object cannot parse (the piece would hold an unterminated
string or unbalanced brackets), so a piece that parses was cut at a real element boundary;
on failure we back off to an earlier boundary or read more. Cuts depend only on the bytes,
never on how the decompressor happened to chunk them.

Piece size: 32 KB, about a hundred events. A piece's objects then die young, before the
garbage collector's generations fill and promote them, and stay in the CPU caches: on a
246k-event trace, 2 MB pieces cost about twice the CPU time of 32 KB ones.

Exact times: a float64 holds a 3-decimal µs `ts` exactly enough to recover its nanoseconds
only below 2**43 µs (the caller checks the neighbouring candidates). A piece with any
element's float `ts` at or above that is decoded again with every `"ts"` number quoted, so
the caller splits the digits itself (FORMATS.md §1: parse ts as a decimal). Quoting costs
about 3 µs an event, so only pieces that need it pay.

Public surface: `TraceArray`, `open_trace_array`, `has_key_array`, `Decode`,
`decode_generic`, `quote_ts`, `EXACT_FLOAT_LIMIT`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingest._io import ByteStream
from ingest.errors import ParseError

HEAD_LIMIT = 16 << 20
TAIL_SIZE = 1 << 20
PIECE_BYTES = 32 << 10  # small: see "Piece size" above
MAX_BACKOFF = 8
MAX_KEY_TRIES = 64
MAX_ELEMENT_BYTES = 64 << 20  # no real trace event is this large: stop instead of buffering
_TS_NUMBER = re.compile(rb'("ts"\s*:\s*)(-?[0-9][0-9.eE+-]*)')
_WS = b" \t\r\n"
EXACT_FLOAT_LIMIT = float(2**43)
Decode = Callable[[bytes], list[Any] | None]


def quote_ts(data: bytes) -> bytes:
    """Turn every `"ts": <number>` into `"ts": "<number>"` so no digit is lost."""
    return _TS_NUMBER.sub(rb'\1"\2"', data)


@dataclass
class TraceArray:
    """The top-level object without the array, and an iterator over the array in pieces.

    `pieces` yields `(index_of_first_element, elements)`.
    """

    top: dict[str, Any]
    pieces: Iterator[tuple[int, list[Any]]]
    streamed: bool = field(default=True)


def open_trace_array(
    stream: ByteStream, key: str = "traceEvents", decode: Decode | None = None
) -> TraceArray:
    """Locate `key`'s array in the top-level object of the stream and prepare to iterate it.

    `decode(piece)` turns the bytes of some elements (comma separated, no brackets) into a
    list with one item per element, or None when they are not valid JSON: a refusal means
    "cut elsewhere", so it must refuse every cut inside an element, as `decode_generic` (the
    default) does. A document too unusual to stream is decoded whole, generically.

    Only the first `HEAD_LIMIT` bytes are searched for `key`, so memory never grows with
    what comes before it (a gzip bomb hides `traceEvents` behind a 1 GiB string). A bare
    array (the Chrome array format) is streamed the same way; any other layout is decoded
    whole, but only when the whole document fits in the head.

    Raises:
        ParseError: invalid JSON, no such array, or `key` not within the first `HEAD_LIMIT`
            bytes of a larger document.
    """
    chunks = stream.chunks()
    buf, eof = b"", False
    while len(buf) <= HEAD_LIMIT and not _is_array(buf) and _key_array(buf, key) is None:
        chunk = next(chunks, None)
        if chunk is None:
            eof = True
            break
        buf += chunk
    decode = decode or decode_generic
    if _is_array(buf):
        return _bare_array(stream, buf, chunks, decode)
    located = _key_array(buf, key)
    if located is None:
        if eof:
            return _whole_document(stream, buf, key)
        raise ParseError(
            f"the '{key}' array does not start within the first {HEAD_LIMIT >> 20} MB; perfdash "
            "reads traces whose other top-level keys come after it or are smaller",
            source=stream.source,
            offset=len(buf),
        )
    start, head = located
    tail_offset, tail = stream.tail(TAIL_SIZE)
    tail_top, close_from_end = _parse_tail(tail, max(0, start - tail_offset), key)
    top = head | tail_top
    pieces = _pieces(stream, buf, start, chunks, close_from_end, key, decode)
    return TraceArray(top=top, pieces=pieces)


def has_key_array(stream: ByteStream, key: str = "traceEvents") -> bool:
    """Whether `key`'s array starts, as a top-level key, within the first `HEAD_LIMIT` bytes.

    The same structural test `open_trace_array` applies, for format detection: a trace whose
    large ``metadata`` object comes first is recognised by its shape, not by keys that happen
    to sit in its first kilobytes. Reading stops at the first chunk that settles it.

    Raises:
        ParseError: a corrupt gzip stream.
    """
    buf = b""
    for chunk in stream.chunks():
        buf += chunk
        if _key_array(buf, key) is not None:
            return True
        if len(buf) > HEAD_LIMIT:
            break
    return False


def _is_array(buf: bytes) -> bool:
    return buf.lstrip(_WS)[:1] == b"["


def _key_array(buf: bytes, key: str) -> tuple[int, dict[str, Any]] | None:
    """Where `key`'s array starts in `buf` and the keys before it, or None.

    Every occurrence of `"key"` is tried in turn, so one inside an earlier string value
    does not hide the real one; at most `MAX_KEY_TRIES` of them, since each try parses the
    bytes before it (a hostile head of nested `{"traceEvents": [...]}` would be quadratic).
    """
    marker = b'"' + key.encode() + b'"'
    found = buf.find(marker)
    for _ in range(MAX_KEY_TRIES):
        if found < 0:
            break
        start = _array_start(buf, found + len(marker))
        head = _parse_head(buf[:found]) if start >= 0 else None
        if head is not None:
            return start, head
        found = buf.find(marker, found + 1)
    return None


def _bare_array(
    stream: ByteStream, buf: bytes, chunks: Iterator[bytes], decode: Decode
) -> TraceArray:
    """Stream a top-level array (Chrome's array format) in pieces, like `traceEvents`."""
    start = buf.index(b"[") + 1
    tail = stream.tail(TAIL_SIZE)[1]
    body = tail.rstrip(_WS)
    close_from_end = len(tail) - len(body) + 1 if body.endswith(b"]") else None
    pieces = _pieces(stream, buf, start, chunks, close_from_end, "traceEvents", decode)
    return TraceArray(top={}, pieces=pieces)


def _array_start(buf: bytes, after_key: int) -> int:
    """Index just past the `[` that follows `"key" :`, or -1."""
    i = after_key
    n = len(buf)
    while i < n and buf[i] in _WS:
        i += 1
    if i >= n or buf[i] != ord(":"):
        return -1
    i += 1
    while i < n and buf[i] in _WS:
        i += 1
    return i + 1 if i < n and buf[i] == ord("[") else -1


def _parse_head(head: bytes) -> dict[str, Any] | None:
    """The keys before the array, or None when the head is not `{ ...,` shaped."""
    body = head.strip(_WS)
    if not body.startswith(b"{"):
        return None
    body = body.rstrip(_WS)
    if body.endswith(b","):
        body = body[:-1]
    try:
        doc = orjson.loads(body + b"}")
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _parse_tail(tail: bytes, first: int, key: str) -> tuple[dict[str, Any], int | None]:
    """Keys after the array, and where the array's `]` sits counted from the end.

    Every `]` whose remainder is a valid end of the top-level object is a candidate; nested
    arrays among the trailing keys (a `deviceProperties` written last) are candidates too,
    while a `]` inside the events never is. So the leftmost candidate closes the array.
    Only `]` at or after `first` (the array's start, when the tail reaches back that far)
    and remainders without `key` count. Returns `({}, None)` when there is none (a truncated
    file; the event pieces then report it precisely).
    """
    best: tuple[dict[str, Any], int | None] = ({}, None)
    misses = 0
    idx = len(tail)
    while misses < 64:
        idx = tail.rfind(b"]", first, idx)
        if idx < 0:
            break
        before = tail[max(first, idx - 64) : idx].rstrip(_WS)
        if before and before[-1:] not in (b"}", b"["):
            continue  # the array ends after an event object (or is empty): cheap rejection
        rest = tail[idx + 1 :].strip(_WS)
        doc: Any = None
        if rest == b"}":
            doc = {}
        elif rest.startswith(b",") and rest[1:].lstrip(_WS).startswith(b'"'):
            try:
                doc = orjson.loads(b"{" + rest[1:])
            except orjson.JSONDecodeError:
                doc = None
        if isinstance(doc, dict) and key not in doc:
            best, misses = (doc, len(tail) - idx), 0
        else:
            misses += 1
    return best


def _boundary_before(window: bytes, first: int, limit: int) -> int:
    """Index of the last `}` of a `}` `,` `{` sequence in `window[first:limit]`, or -1."""
    while True:
        brace = window.rfind(b"{", first, limit)
        if brace <= first:
            return -1
        i = brace - 1
        while i >= first and window[i] in _WS:
            i -= 1
        if i >= first and window[i] == ord(","):
            i -= 1
            while i >= first and window[i] in _WS:
                i -= 1
            if i >= first and window[i] == ord("}"):
                return i
        limit = brace


def decode_generic(piece: bytes) -> list[Any] | None:
    """Decode `[piece]` with orjson, quoting `ts` numbers when a float one is too large to
    trust (any element's `ts`, not a sample: each event is exact whatever piece it is in)."""
    try:
        items = orjson.loads(b"[" + piece + b"]")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(items, list):
        return None
    limit = EXACT_FLOAT_LIMIT
    for item in items:
        if type(item) is dict:
            ts = item.get("ts")
            if type(ts) is float and not -limit < ts < limit:
                quoted: list[Any] = orjson.loads(b"[" + quote_ts(piece) + b"]")
                return quoted
    return items


def _error_at(
    piece: bytes, offset: int, index: int, source: str, what: str, key: str
) -> ParseError:
    """A ParseError pointing at the byte where orjson gave up on `piece` (or, for text that
    is not UTF-8, which orjson refuses before parsing, at the first byte that is not)."""
    try:
        orjson.loads(b"[" + piece + b"]")
        pos = len(piece)
    except orjson.JSONDecodeError as e:
        pos = max(0, e.pos - 1)
        try:
            piece.decode()
        except UnicodeDecodeError as bad:
            pos = bad.start
    return ParseError(what, source=source, offset=offset + pos, location=f"{key}[{index}:]")


def _pieces(
    stream: ByteStream,
    buf: bytes,
    start: int,
    chunks: Iterator[bytes],
    close_from_end: int | None,
    key: str,
    decode: Decode,
) -> Iterator[tuple[int, list[Any]]]:
    window, pos = buf, start  # window[pos:] is what is left to decode
    offset = 0  # decompressed offset of window[0]
    index = 0
    eof = False
    want = PIECE_BYTES
    while True:
        while not eof and len(window) - pos < want:
            nxt = next(chunks, None)
            if nxt is None:
                eof = True
            else:
                window, offset, pos = window[pos:] + nxt, offset + pos, 0
        if eof and len(window) - pos < want:
            yield from _last_piece(
                window[pos:], offset + pos, index, close_from_end, stream.source, key, decode
            )
            return
        cut = pos + want  # not len(window): cuts depend on the bytes, not on the chunking
        items = None
        for _ in range(MAX_BACKOFF):
            cut = _boundary_before(window, pos, cut)
            if cut < 0:
                break
            items = decode(window[pos : cut + 1])
            if items is not None:
                break
        if items is None:
            if want >= MAX_ELEMENT_BYTES:
                raise _error_at(
                    window[pos : pos + PIECE_BYTES],
                    offset + pos,
                    index,
                    stream.source,
                    f"no complete '{key}' element in {MAX_ELEMENT_BYTES >> 20} MB: "
                    "the file is not valid trace JSON from here on",
                    key,
                )
            want *= 2  # one element is larger than the window: read more
            continue
        yield index, items
        index += len(items)
        pos = window.index(b"{", cut)  # the window is cut down only when more is read
        want = PIECE_BYTES


def _last_piece(
    window: bytes,
    offset: int,
    index: int,
    close_from_end: int | None,
    source: str,
    key: str,
    decode: Decode,
) -> Iterator[tuple[int, list[Any]]]:
    if close_from_end is None or close_from_end > len(window):
        raise _error_at(
            window,
            offset,
            index,
            source,
            f"truncated or invalid JSON: the '{key}' array does not end properly",
            key,
        )
    piece = window[: len(window) - close_from_end]
    if not piece.strip(_WS):
        return
    items = decode(piece)
    if items is None:
        raise _error_at(piece, offset, index, source, f"invalid JSON in the '{key}' array", key)
    yield index, items


def _whole_document(stream: ByteStream, data: bytes, key: str) -> TraceArray:
    """Decode a small document (all of it within `HEAD_LIMIT`) at once: unusual layouts."""
    try:
        doc = orjson.loads(quote_ts(data))  # rare layouts: always exact, never fast
    except orjson.JSONDecodeError:
        try:
            orjson.loads(data)
            pos = len(data)
        except orjson.JSONDecodeError as e:
            raise ParseError(f"invalid JSON: {e.msg}", source=stream.source, offset=e.pos) from None
        raise ParseError("invalid JSON", source=stream.source, offset=pos) from None
    if isinstance(doc, list):
        return TraceArray(top={}, pieces=iter([(0, doc)]), streamed=False)
    if isinstance(doc, dict) and isinstance(doc.get(key), list):
        items = doc.pop(key)
        return TraceArray(top=doc, pieces=iter([(0, items)]), streamed=False)
    raise ParseError(f"not a torch.profiler trace: no '{key}' list", source=stream.source)

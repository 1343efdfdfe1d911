"""Typed decoding of Kineto `traceEvents` pieces: msgspec reads only the fields perfdash uses.

Why: orjson builds every key and value of every element (flow arrows, `Concrete Inputs`,
strides) as Python objects, and the garbage collector then walks them. A msgspec decode
into `KinetoEvent` skips what the parser never reads and builds structs the collector does
not track: about 3x faster on a 2025 H200 trace (issue #17).

The same answer as orjson or none: `decode_piece` hands a piece to `decode_generic` (orjson,
then the parser's per-dict path) wherever the two decoders could disagree, so the events
are those the generic path makes:
- msgspec refuses the piece: invalid JSON (orjson then decides where to cut, as before), an
  element that is not an object, a field of a type the struct does not declare (a boolean
  `ts`, a list `name`), args nested deeper than `ARG_DEPTH`, or an integer outside int64
  (orjson reads those as floats, msgspec as exact ints);
- the piece is not valid UTF-8 (msgspec does not check strings it skips; orjson refuses).
One known difference remains, a leniency: a number beyond the float range (`1e400`) in a
field perfdash never reads no longer fails the trace; orjson refused it.

Public surface: `KinetoEvent`, `decode_piece`, `ARG_DEPTH`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType

from ingest.parsers._json_stream import EXACT_FLOAT_LIMIT, decode_generic, quote_ts

ARG_DEPTH = 8
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Number = Int64 | float | str | None
# Every `ph` of the Trace Event Format. A Literal, not a str: msgspec then hands out the
# one interned value, where a str field costs a new string per event (8% of the decode of
# an H200 trace); an element of another phase sends its piece to the generic path.
Phase = Literal[
    "B", "E", "X", "i", "I", "C", "b", "n", "e", "S", "T", "p", "F", "s", "t", "f", "P", "N",
    "O", "D", "M", "V", "v", "R", "c", "(", ")",
]  # fmt: skip

# An `args` value: JSON nested at most ARG_DEPTH deep (msgspec 0.23 has no recursive types).
_Value: Any = Union[None, bool, Int64, float, str]  # noqa: UP007 - built up at runtime
for _ in range(ARG_DEPTH):
    _Value = Union[None, bool, Int64, float, str, list[_Value], dict[str, _Value]]  # noqa: UP007


class KinetoEvent(msgspec.Struct, gc=False):
    """The fields of one `traceEvents` element that the parser reads; the rest is skipped.

    A default of UNSET marks a key whose absence the generic path treats differently from
    null (`item["ts"]` raises, `item.get("name", "?")` names it); the others default to
    None, as `item.get` would.
    """

    cat: str | None = None
    name: str | UnsetType = UNSET
    pid: Number = None
    tid: Number = None
    ts: Number | UnsetType = UNSET
    dur: Number | UnsetType = UNSET
    args: dict[str, _Value] | None = None
    # A flow event's fields (`_kineto_flows`); other events' `ph` is read and dropped.
    ph: Phase | None = None
    id: Number = None
    bp: str | None = None

    def as_item(self) -> dict[str, Any]:
        """The element as the generic path sees it (the fields read; absent keys absent)."""
        return {
            key: value
            for key in self.__struct_fields__
            if (value := getattr(self, key)) is not UNSET
        }


_EVENTS = msgspec.json.Decoder(list[KinetoEvent])


def decode_piece(piece: bytes) -> list[Any] | None:
    """`decode_generic`'s contract (a list with one item per element, or None for invalid
    JSON), with `KinetoEvent` items wherever the typed decode gives the same events."""
    items = _decode_typed(piece)
    return decode_generic(piece) if items is None else items


def _decode_typed(piece: bytes) -> list[KinetoEvent] | None:
    if not piece.isascii():
        try:
            piece.decode()
        except UnicodeDecodeError:
            return None
    try:
        items: list[KinetoEvent] = _EVENTS.decode(b"[" + piece + b"]")
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    limit = EXACT_FLOAT_LIMIT
    for item in items:  # the generic path's rule: any float ts too large to trust
        ts = item.ts
        if type(ts) is float and not -limit < ts < limit:
            try:
                quoted: list[KinetoEvent] = _EVENTS.decode(b"[" + quote_ts(piece) + b"]")
            except (msgspec.DecodeError, RecursionError):
                return None
            return quoted
    return items

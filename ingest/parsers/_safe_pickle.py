"""Load a pickle that may only hold plain data: no globals, no objects, no persistent ids.

Unpickling runs code: `GLOBAL`/`STACK_GLOBAL`/`INST` import any callable and `REDUCE`,
`OBJ`, `NEWOBJ` and `BUILD` call it. A PyTorch memory snapshot is dicts, lists, tuples,
strings, numbers, booleans and None, so every opcode that names or calls something is
refused: the load uses an `Unpickler` whose `find_class` and `persistent_load` raise, so
nothing is ever imported and no callable exists to call. When it refuses, `scan_opcodes`
walks the opcodes (`pickletools.genops`, which only decodes, never executes) to name the
first forbidden one and its byte offset.

The load costs time and memory in proportion to the bytes: a memo reference (`BINGET`)
shares an object, it never copies one, so a 300-byte pickle can hold a list nested 26
deep whose every level holds the next one twice, at no more cost. Walking or formatting
what it shares is what multiplies it; the snapshot reader (`ingest/memsnap/snapshot.py`)
counts that, a shared object at every use.

Public surface: `load_plain_pickle`, `scan_opcodes`, `FORBIDDEN_OPCODES`, `PICKLE_MAGIC`.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any, NoReturn

from ingest.errors import ParseError

PICKLE_MAGIC = b"\x80"  # PROTO: protocols 2 and later start with it
FORBIDDEN_OPCODES = frozenset(
    {
        "GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "REDUCE", "BUILD",
        "PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4", "NEXT_BUFFER", "READONLY_BUFFER",
    }
)  # fmt: skip
_WHY = {
    "GLOBAL": "imports a callable",
    "STACK_GLOBAL": "imports a callable",
    "INST": "imports and calls a class",
    "OBJ": "builds an object",
    "NEWOBJ": "builds an object",
    "NEWOBJ_EX": "builds an object",
    "REDUCE": "calls a function",
    "BUILD": "sets an object's state",
    "PERSID": "asks for a persistent object",
    "BINPERSID": "asks for a persistent object",
}


class _NoGlobals(pickle.Unpickler):
    """The second line of defence: even if the scan missed one, nothing is imported."""

    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"refused global {module}.{name}")

    def persistent_load(self, pid: Any) -> NoReturn:
        raise pickle.UnpicklingError("refused persistent id")


def scan_opcodes(data: bytes, *, source: str, max_opcodes: int) -> None:
    """Refuse the first opcode that imports, calls or builds anything, and bound the count.

    Raises:
        ParseError: a forbidden opcode (its name, byte offset and, for a global, the name
            it imports), too many opcodes, or bytes that are not a pickle.
    """
    count = 0
    try:
        for op, arg, pos in pickletools.genops(data):
            count += 1
            if op.name in FORBIDDEN_OPCODES:
                what = f" {arg!r}" if op.name in ("GLOBAL", "INST") and arg else ""
                raise ParseError(
                    f"refused pickle opcode {op.name}{what}: it "
                    f"{_WHY.get(op.name, 'reaches outside plain data')}; a memory snapshot "
                    "holds only dicts, lists, strings and numbers, so it was not unpickled",
                    source=source,
                    offset=pos,
                )
            if count > max_opcodes:
                raise ParseError(
                    f"the pickle has more than {max_opcodes} opcodes; refused as too large",
                    source=source,
                    offset=pos,
                )
    except ValueError as e:  # genops: truncated, unknown opcode, bad argument
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"not a readable pickle: {e}", source=source) from e


def load_plain_pickle(data: bytes, *, source: str, max_opcodes: int = 50_000_000) -> Any:
    """The plain data in `data`, after refusing anything that could run code.

    The load itself refuses every global and persistent id, which is what makes it safe
    (no callable can reach the stack, so `REDUCE`, `BUILD`, `OBJ` and `NEWOBJ` have nothing
    to call). Only when it refuses, or fails, are the opcodes walked to say which one and
    at what byte offset: the walk is pure Python, 10x the cost of the load.

    Args:
        data: the whole pickle (the caller bounds its size).
        source: the file name, for error messages.
        max_opcodes: bound on the opcodes the locating walk decodes.

    Raises:
        ParseError: not a pickle, truncated, or holding a forbidden opcode (located by byte
            offset).
    """
    if not data.startswith(PICKLE_MAGIC):
        raise ParseError("not a pickle (protocol 2+ starts with byte 0x80)", source=source)
    stream = io.BytesIO(data)
    try:
        value = _NoGlobals(stream).load()
    except (
        pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
        AttributeError, MemoryError, OverflowError,
    ) as e:  # fmt: skip
        scan_opcodes(data, source=source, max_opcodes=max_opcodes)  # raises, located
        raise ParseError(f"not a readable pickle: {e}", source=source) from e
    if stream.tell() != len(data):
        raise ParseError(
            "bytes follow the pickle's STOP opcode; refused", source=source, offset=stream.tell()
        )
    return value

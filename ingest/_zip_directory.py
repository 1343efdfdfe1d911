"""The size of a zip's central directory, read from its end record before anything parses it.

`zipfile.ZipFile` reads the whole central directory into memory and builds a `ZipInfo` for
each entry (about 600 bytes each) before a caller sees the first: a million one-letter
entries in 51 MB cost 593 MB. This reads only the end-of-central-directory record (and the
zip64 one, when its locator precedes it), found the way `zipfile` finds it, so the entry
count and the directory's size can be refused first.

Public surface: `ZipDirectory`, `read_zip_directory`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import IO

_EOCD = struct.Struct("<4s4H2LH")  # signature, disks, entries here/total, size, offset, comment
_EOCD_SIG = b"PK\x05\x06"
_LOCATOR = struct.Struct("<4sLQL")  # zip64 locator: signature, disk, record offset, disks
_LOCATOR_SIG = b"PK\x06\x07"
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # zip64 record: ..., entries here/total, size, offset
_EOCD64_SIG = b"PK\x06\x06"
_MAX_COMMENT = 1 << 16


@dataclass(frozen=True, slots=True)
class ZipDirectory:
    """What the end record says of the central directory."""

    entries: int
    size: int  # bytes
    zip64: bool


def read_zip_directory(f: IO[bytes]) -> ZipDirectory | None:
    """The central directory's entry count and size, or None with no end record.

    Mirrors `zipfile._EndRecData`: the record is the last 22 bytes when there is no
    comment, else the last signature in the final 64 KiB; a zip64 locator just before it
    points to the zip64 record, whose figures then replace the 16- and 32-bit ones.
    """
    f.seek(0, 2)
    file_size = f.tell()
    start = max(0, file_size - _EOCD.size - _MAX_COMMENT)
    f.seek(start)
    tail = f.read()
    at = len(tail) - _EOCD.size
    if at < 0:
        return None
    if not (tail[at : at + 4] == _EOCD_SIG and tail[-2:] == b"\0\0"):
        at = tail.rfind(_EOCD_SIG)
        if at < 0 or at + _EOCD.size > len(tail):
            return None
    record = _EOCD.unpack_from(tail, at)
    directory = ZipDirectory(entries=max(record[4], record[3]), size=record[5], zip64=False)
    return _zip64(f, start + at, directory)


def _zip64(f: IO[bytes], eocd_at: int, directory: ZipDirectory) -> ZipDirectory:
    """The zip64 record's figures, when its locator sits just before the end record."""
    locator_at = eocd_at - _LOCATOR.size
    if _record(f, locator_at, _LOCATOR, _LOCATOR_SIG) is None:
        return directory
    record = _record(f, locator_at - _EOCD64.size, _EOCD64, _EOCD64_SIG)
    if record is None:
        return directory
    return ZipDirectory(entries=max(record[6], record[7]), size=record[8], zip64=True)


def _record(
    f: IO[bytes], at: int, shape: struct.Struct, signature: bytes
) -> tuple[int, ...] | None:
    """The record of `shape` at byte `at`, or None when it is not there."""
    if at < 0:
        return None
    f.seek(at)
    data = f.read(shape.size)
    if len(data) != shape.size or data[:4] != signature:
        return None
    return shape.unpack(data)

"""Does an uploaded file look like one rank of a torch.profiler job? Read from its head only.

A multi-rank upload is checked before a byte is stored, so the user hears which file is wrong
while the upload is still on screen, not minutes later from the worker (which would ignore a
non-trace file in the bundle, or fail the whole trace on two files claiming one rank). Only
the first `HEAD_BYTES` (decompressed) are read: Kineto writes `distributedInfo` in its header,
before `traceEvents`, so the rank is there when the profiler recorded one.

Public surface: `sniff_rank`, `RankHead`, `HEAD_BYTES`.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from ingest._io import GZIP_MAGIC, GZIP_WBITS
from ingest.errors import UnsupportedFormatError
from ingest.parsers._kineto_sniff import looks_like_kineto

HEAD_BYTES = 256 * 1024
_RAW_READ = 64 * 1024
# `"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "pg_config": [...]}`:
# the object's own keys come before any nested object, so the first `}` ends the search.
_DIST = re.compile(rb'"distributedInfo"\s*:\s*\{([^{}]*)')
_RANK = re.compile(rb'"rank"\s*:\s*(-?\d+)')
_WORLD = re.compile(rb'"world_size"\s*:\s*(-?\d+)')


@dataclass(frozen=True, slots=True)
class RankHead:
    """What a rank file's header says about its place in the job (None: not recorded)."""

    rank: int | None
    world_size: int | None


def sniff_rank(stream: BinaryIO, name: str) -> RankHead:
    """Read the head of `stream` (gzip or plain), then rewind it.

    >>> import io
    >>> head = b'{"schemaVersion": 1, "distributedInfo": {"rank": 3, "world_size": 8}}'
    >>> sniff_rank(io.BytesIO(head), "r3.json")
    RankHead(rank=3, world_size=8)

    Raises:
        UnsupportedFormatError: the file is empty, unreadable gzip, or not a torch.profiler
            (Kineto) trace; the message starts with `name`.
    """
    head = _head(stream, name)
    if not head.strip():
        raise UnsupportedFormatError(f"{name}: the file is empty")
    if not looks_like_kineto(head):
        raise UnsupportedFormatError(
            f"{name}: not a torch.profiler trace, so not a rank of a multi-rank trace "
            f"(it starts with {head.lstrip()[:32].decode(errors='replace')!r})"
        )
    dist = _DIST.search(head)
    if dist is None:
        return RankHead(rank=None, world_size=None)
    rank, world = _RANK.search(dist.group(1)), _WORLD.search(dist.group(1))
    return RankHead(
        rank=int(rank.group(1)) if rank else None,
        world_size=int(world.group(1)) if world else None,
    )


def _head(stream: BinaryIO, name: str) -> bytes:
    """Up to `HEAD_BYTES` of the decompressed content; the stream is rewound after."""
    try:
        raw = stream.read(_RAW_READ)
        if not raw.startswith(GZIP_MAGIC):
            return raw
        inflate = zlib.decompressobj(GZIP_WBITS)
        out = inflate.decompress(raw, HEAD_BYTES)
        while len(out) < HEAD_BYTES and not inflate.eof and (more := stream.read(_RAW_READ)):
            out += inflate.decompress(inflate.unconsumed_tail + more, HEAD_BYTES - len(out))
        if not out:
            raise UnsupportedFormatError(f"{name}: gzip data ends before any content (truncated)")
        return out
    except zlib.error as e:
        raise UnsupportedFormatError(f"{name}: gzip data is corrupt ({e})") from e
    finally:
        stream.seek(0)

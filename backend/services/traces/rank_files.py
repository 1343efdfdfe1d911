"""The files of a multi-rank upload, checked as ranks of one job before a byte is stored.

Without the check a non-trace file in the bundle is skipped by the worker with a warning,
and two files of one rank fail the whole trace minutes later; here the upload is refused at
once with the file named (`ingest.rank_sniff` reads each file's header only).

Public surface: `check_rank_files`.
"""

from collections.abc import Sequence
from typing import BinaryIO

from backend.services.errors import InvalidInputError
from ingest.errors import UnsupportedFormatError
from ingest.parsers.torch_memsnap import is_memory_snapshot
from ingest.rank_sniff import RankHead, sniff_rank

_SNIFF = 256


def _is_snapshot(stream: BinaryIO) -> bool:
    """Whether the stream starts as a pickled memory snapshot (uncompressed); rewound."""
    try:
        return is_memory_snapshot(stream.read(_SNIFF))
    finally:
        stream.seek(0)


def check_rank_files(files: Sequence[tuple[str, BinaryIO]]) -> None:
    """Every file must be a torch.profiler trace, except at most one PyTorch memory snapshot
    of the same run (it is attached to the trace); no two may claim one rank or disagree on
    the world size (ranks that were not recorded are numbered later, by name or position).

    Raises:
        InvalidInputError: listing every file that is wrong, each by name.
    """
    problems: list[str] = []
    heads: list[tuple[str, RankHead]] = []
    snapshots = [name for name, stream in files if _is_snapshot(stream)]
    if len(snapshots) > 1:
        problems.append(f"{len(snapshots)} memory snapshots ({', '.join(snapshots)}); send one")
    for name, stream in files:
        if name in snapshots:
            continue
        try:
            heads.append((name, sniff_rank(stream, name)))
        except UnsupportedFormatError as e:
            problems.append(str(e))
    claimed: dict[int, str] = {}
    for name, head in heads:
        if head.rank is None:
            continue
        if head.rank in claimed:
            problems.append(f"{name}: rank {head.rank} again (also in {claimed[head.rank]})")
        claimed.setdefault(head.rank, name)
    worlds = {name: h.world_size for name, h in heads if h.world_size is not None}
    if len(set(worlds.values())) > 1:
        sizes = ", ".join(f"{n} says {w}" for n, w in worlds.items())
        problems.append(f"the files come from jobs of different world sizes ({sizes})")
    if problems:
        raise InvalidInputError("not the ranks of one job: " + "; ".join(problems))

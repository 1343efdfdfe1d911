"""Several rank files of one distributed job read as one trace with several ranks.

Each file keeps its own absolute clock (`baseTimeNanoseconds` + `ts`), so ranks line up in
time as they ran. A file's rank comes from its `distributedInfo`; failing that, from a
`rank<N>` / `rank-<N>` / `rank_<N>` in its name; failing that, from its position.

Public surface: `merge_ranks`, `RankFile`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import ParseError
from ingest.events import Device, Event, EventBlock, Flows, ParseReport, TraceHeader

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
Items = Iterator[Event | EventBlock]
Opener = Callable[[Path, ParseReport, str], tuple[TraceHeader, Items]]


@dataclass(frozen=True, slots=True)
class RankFile:
    """One member of the job: its name inside the upload and where it lies on disk."""

    name: str
    path: Path


def merge_ranks(
    files: list[RankFile], report: ParseReport, open_file: Opener, source: str
) -> tuple[TraceHeader, Items]:
    """Open every rank file and chain their events (and blocks), each stamped with its rank.

    Raises:
        ParseError: two files claim the same rank, or the files disagree on the world size.
    """
    opened: list[tuple[int, RankFile, TraceHeader, Items, ParseReport]] = []
    claimed: dict[int, str] = {}
    for position, file in enumerate(sorted(files, key=lambda f: f.name)):
        sub = ParseReport()
        header, events = open_file(file.path, sub, f"{source}:{file.name}")
        rank = header.rank if header.rank is not None else _rank_from_name(file.name, position)
        if rank in claimed:
            raise ParseError(
                f"two files claim rank {rank}: {claimed[rank]} and {file.name}", source=source
            )
        claimed[rank] = file.name
        opened.append((rank, file, header, events, sub))
    opened.sort(key=lambda o: o[0])
    worlds = {o[2].world_size for o in opened if o[2].world_size is not None}
    if len(worlds) > 1:
        raise ParseError(
            f"the files come from jobs of different sizes (world sizes {sorted(worlds)})",
            source=source,
        )
    missing = missing_ranks(sorted(claimed), next(iter(worlds), None))
    if missing:
        report.warnings.append(missing)
    first = opened[0][2]
    header = TraceHeader(
        format=first.format,
        rank=None,
        world_size=worlds.pop() if worlds else len(opened),
        base_time_ns=min((o[2].base_time_ns for o in opened if o[2].base_time_ns), default=None),
        metadata=dict(first.metadata)
        | {"ranks": [{"rank": o[0], "file": o[1].name} for o in opened]},
    )
    for rank, _, rank_header, _, _ in opened:
        header.devices.extend(
            Device(index=d.index, name=d.name, properties=d.properties | {"rank": rank})
            for d in rank_header.devices
        )
    report.bytes_total = sum(o[1].path.stat().st_size for o in opened)
    header.flows = Flows()
    return header, _chain(opened, report, header.flows)


def missing_ranks(ranks: list[int], world_size: int | None) -> str:
    """A warning naming the ranks of the job that the upload lacks, or "".

    >>> missing_ranks([0, 1], 128)
    'the job had 128 ranks; the upload holds 2 (0, 1): ranks 2-127 are missing'
    >>> missing_ranks([0, 3], 4), missing_ranks([0, 1], 2), missing_ranks([0], None)
    ('the job had 4 ranks; the upload holds 2 (0, 3): ranks 1-2 are missing', '', '')
    """
    if world_size is None:
        return ""
    present = set(ranks)
    absent = [r for r in range(world_size) if r not in present]
    if not absent:
        return ""
    spans: list[str] = []
    start = prev = absent[0]
    for r in [*absent[1:], None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    held = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
    shown = ", ".join(spans[:6]) + (", ..." if len(spans) > 6 else "")
    return (
        f"the job had {world_size} ranks; the upload holds {len(ranks)} ({held}): "
        f"ranks {shown} are missing"
    )


def _rank_from_name(name: str, position: int) -> int:
    match = _RANK_IN_NAME.search(Path(name).name)
    return int(match.group(1)) if match else position


def _chain(
    opened: list[tuple[int, RankFile, TraceHeader, Items, ParseReport]],
    report: ParseReport,
    flows: Flows,
) -> Items:
    done_bytes = 0
    for rank, file, rank_header, items, sub in opened:
        for i, item in enumerate(items):
            if isinstance(item, EventBlock):
                item.rank = [rank] * len(item)  # the block stays columns
            else:
                item.rank = rank
            if isinstance(item, EventBlock) or not i & 4095:
                report.bytes_done = done_bytes + sub.bytes_done
            yield item
        done_bytes += file.path.stat().st_size
        report.bytes_done = done_bytes
        if rank_header.flows is not None:  # filled now that the file is read
            flows.extend(rank_header.flows, rank)
        report.skipped += sub.skipped
        for warning in sub.warnings:
            if len(report.warnings) < report.max_warnings:
                report.warnings.append(f"rank {rank} ({file.name}): {warning}")

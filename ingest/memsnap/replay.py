"""Replay a device's allocator history: totals after each entry, and the state at any entry.

The snapshot knows the allocator exactly at dump time (its segments and blocks); the trace
entries say what changed before. Walking the entries backwards from the dump, as PyTorch's
MemoryViz does, gives the blocks and segments alive after any entry, including those that
were allocated before recording began (they are still there at the start). Totals:

- *allocated* counts block bytes, as `torch.cuda.memory_allocated` does. An `alloc` entry
  carries the requested size, so it is rounded up as the allocator rounds (512 B
  granularity); a block the allocator left unsplit (remainder under its split threshold)
  is larger than that, which only the dump's blocks show.
- *requested* counts the sizes the program asked for (`requested_bytes` in memory_stats).
- *reserved* counts segment bytes (`segment_alloc`/`segment_free`, and `segment_map`/
  `segment_unmap` for expandable segments).

Public surface: `Replay`, `replay`, `round_size`, `State`, `BEFORE_HISTORY`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.memsnap.snapshot import Frames, Segment, TraceEntry

_MIN_BLOCK = 512
# The stack of a block whose allocation is older than the first kept entry.
BEFORE_HISTORY = ("(allocated before the first kept trace entry: no stack recorded)",)
ALLOC, FREE = "alloc", "free_completed"
SEGMENT_GROW = frozenset({"segment_alloc", "segment_map"})
SEGMENT_SHRINK = frozenset({"segment_free", "segment_unmap"})


def round_size(size: int) -> int:
    """The caching allocator's block size for a request (its default rounding).

    >>> round_size(1), round_size(512), round_size(513)
    (512, 512, 1024)
    """
    return _MIN_BLOCK if size < _MIN_BLOCK else -(-size // _MIN_BLOCK) * _MIN_BLOCK


@dataclass(slots=True)
class State:
    """Live blocks (address -> size, requested, frames) and segments (address -> size,
    stream, type) after some entry."""

    blocks: dict[int, tuple[int, int, Frames]]
    segments: dict[int, tuple[int, int, str]]


@dataclass(slots=True)
class Replay:
    """One device's totals after each entry, and its totals before the first."""

    entries: list[TraceEntry]
    allocated: list[int]
    requested: list[int]
    reserved: list[int]
    start_allocated: int
    start_requested: int
    start_reserved: int
    dump: State
    # A free entry's index -> the index of the alloc it frees. A free entry carries the
    # stack of the free (zero_grad, a scope exit), not of the allocation.
    alloc_of: dict[int, int]

    @property
    def peak_index(self) -> int | None:
        """The entry after which allocated first reached its maximum; None when no entry
        rose above the level before the first one (the history does not reach the peak)."""
        if not self.allocated:
            return None
        top, before = max(self.allocated), self.start_allocated
        return None if top <= before and before > 0 else self.allocated.index(top)

    def state_after(self, index: int) -> State:
        """Blocks and segments alive right after entry `index`, walking back from the dump."""
        blocks, segments = dict(self.dump.blocks), dict(self.dump.segments)
        for j in range(len(self.entries) - 1, index, -1):
            e = self.entries[j]
            if e.action == ALLOC:
                blocks.pop(e.addr, None)
            elif e.action == FREE:
                alloc = self.alloc_of.get(j)
                frames = self.entries[alloc].frames if alloc is not None else BEFORE_HISTORY
                blocks[e.addr] = (round_size(e.size), e.size, frames)
            elif e.action in SEGMENT_GROW:
                segments.pop(e.addr, None)
            elif e.action in SEGMENT_SHRINK:
                segments[e.addr] = (e.size, e.stream, "")
        return State(blocks, segments)


def replay(device: int, segments: list[Segment], entries: list[TraceEntry]) -> Replay:
    """Totals after each of `entries` (one device's, in order), anchored on the dump."""
    dump = _dump_state(device, segments)
    allocated = sum(b[0] for b in dump.blocks.values())
    requested = sum(b[1] for b in dump.blocks.values())
    reserved = sum(s[0] for s in dump.segments.values())
    for e in entries:  # back to the level before the first entry
        sign = 1 if e.action == ALLOC else -1 if e.action == FREE else 0
        allocated -= sign * round_size(e.size) if sign else 0
        requested -= sign * e.size
        reserved -= e.size if e.action in SEGMENT_GROW else 0
        reserved += e.size if e.action in SEGMENT_SHRINK else 0
    out = Replay(entries, [], [], [], allocated, requested, reserved, dump, {})
    live: dict[int, int] = {}  # address -> index of the alloc entry holding it
    for j, e in enumerate(entries):
        if e.action == ALLOC:
            live[e.addr] = j
        elif e.action == FREE and e.addr in live:
            out.alloc_of[j] = live.pop(e.addr)
    for addr, (size, asked, frames) in dump.blocks.items():
        if addr not in live and not frames and entries:  # older than the history
            dump.blocks[addr] = (size, asked, BEFORE_HISTORY)
    for e in entries:
        if e.action == ALLOC:
            allocated, requested = allocated + round_size(e.size), requested + e.size
        elif e.action == FREE:
            allocated, requested = allocated - round_size(e.size), requested - e.size
        elif e.action in SEGMENT_GROW:
            reserved += e.size
        elif e.action in SEGMENT_SHRINK:
            reserved -= e.size
        out.allocated.append(allocated)
        out.requested.append(requested)
        out.reserved.append(reserved)
    return out


def _dump_state(device: int, segments: list[Segment]) -> State:
    blocks: dict[int, tuple[int, int, Frames]] = {}
    segs: dict[int, tuple[int, int, str]] = {}
    for s in segments:
        if s.device != device:
            continue
        segs[s.address] = (s.total_size, s.stream, s.segment_type)
        for b in s.blocks:
            if b.state != "inactive":  # active_allocated, active_pending_free: still counted
                blocks[b.address] = (b.size, b.requested_size, b.frames)
    return State(blocks, segs)

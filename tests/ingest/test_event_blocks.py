"""`EventBlock`: the nsys parser's large tables (kernels, copies, memsets, syncs, runtime calls,
NVTX ranges) come as columns, and every consumer must see exactly what the same rows as
`Event` objects give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingest import parse_file
from ingest.aggregate import TraceAggregator
from ingest.events import Event, EventBlock, EventKind, TraceFormat, TraceHeader, flatten
from ingest.summary import SummaryBuilder

REPO = Path(__file__).resolve().parents[2]
NSYS = sorted((REPO / "tests" / "data" / "nsys").glob("*.sqlite"))
META = TraceHeader(format=TraceFormat.KINETO)
BLOCK_KINDS = {
    EventKind.KERNEL,
    EventKind.MEMCPY,
    EventKind.MEMSET,
    EventKind.SYNC,
    EventKind.RUNTIME,
    EventKind.ANNOTATION,
}


def _results(aggregator: TraceAggregator, path: Path) -> dict[str, Any]:
    header = parse_file(path).header
    return {
        "events": aggregator.events, "counts": aggregator.stats.counts,
        "span": (aggregator.stats.start_ns, aggregator.stats.duration_ns),
        "kernels": aggregator.stats.kernels(), "summary": aggregator.summary(header),
        "groups": aggregator.kernel_groups(),
    }  # fmt: skip


def test_nsys_blocks_feed_the_same_aggregates_as_their_events() -> None:
    assert NSYS
    for path in NSYS:
        items = list(parse_file(path).items)
        blocks = [i for i in items if isinstance(i, EventBlock)]
        assert any(b.kind is EventKind.RUNTIME for b in blocks), path.name
        assert {b.kind for b in blocks} <= BLOCK_KINDS, path.name
        by_block, by_event = TraceAggregator(), TraceAggregator()
        assert list(by_block.feed(items)) == items
        by_event.drain(flatten(iter(items)))
        assert (
            by_block.events
            == by_event.events
            == sum(len(i) if isinstance(i, EventBlock) else 1 for i in items)
        )
        assert _results(by_block, path) == _results(by_event, path), path.name


def _block() -> EventBlock:
    """Runtime calls on two ranks and three threads, some without a correlation id."""
    rows = [
        ("cudaLaunchKernel", 100, 5, 1, 1, 7, 0),
        ("cudaMemcpyAsync", 110, 9, 1, 2, None, 0),
        ("cudaLaunchKernel", 120, 4, 2, 1, 8, 1),
        ("cudaStreamSynchronize", 130, 50, 1, 1, 9, 0),
        ("cudaLaunchKernel", 200, 5, 2, 3, None, None),
    ]
    names, starts, durs, pids, tids, corrs, ranks = (list(c) for c in zip(*rows, strict=True))
    return EventBlock(EventKind.RUNTIME, names, starts, durs, pid=pids, tid=tids,
                      correlation=corrs, args=[{"api": "runtime"}] * 5, rank=ranks)  # fmt: skip


def test_a_runtime_block_is_accounted_for_as_its_rows_would_be() -> None:
    ops = [
        Event(EventKind.CPU_OP, "aten::mm", 90, 100, pid=1, tid=1, rank=0),
        Event(EventKind.KERNEL, "gemm", 150, 30, device=0, stream=7, correlation=7, rank=0),
    ]
    block = _block()
    events = list(block.events())
    assert [e.correlation for e in events] == [7, None, 8, 9, None]
    assert events[2] == Event(EventKind.RUNTIME, "cudaLaunchKernel", 120, 4, None, None, 2, 1,
                              8, {"api": "runtime"}, 1)  # fmt: skip
    by_block, by_event = SummaryBuilder(), SummaryBuilder()
    for builder in (by_block, by_event):
        for e in ops:
            builder.add(e)
    by_block.add_block(block)
    for e in events:
        by_event.add(e)
    cpu_a, cpu_b = by_block._cpu, by_event._cpu
    for column in ("rt_start", "rt_end", "rt_name", "rt_thread", "rt_corr", "rt_rank"):
        assert getattr(cpu_a, column) == getattr(cpu_b, column), column
    assert (cpu_a.names, cpu_a.thread_rank) == (cpu_b.names, cpu_b.thread_rank)
    assert by_block.stats.counts == by_event.stats.counts
    assert (by_block.stats.start_ns, by_block.stats.end_ns) == (90, 205)
    assert by_block.finish(META) == by_event.finish(META)
    assert by_block.kernel_groups() == by_event.kernel_groups()

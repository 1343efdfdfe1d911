"""The aggregates fed columns (`EventBlock`s) answer exactly what they answer fed the same
events one at a time: every fixture and corpus file, its events regrouped per kind into
blocks of several sizes (1, sizes that cut through steps and kernel runs, and 32k), in
the order a columnar parser emits them (each kind's rows in stream order).

The row path is the reference here; `perf/compare_aggregates.py` checks it against the
code before the columnar aggregates (main) in a subprocess.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest import IngestError, ParseError, parse_file
from ingest._columns import regroup, to_block
from ingest.aggregate import TraceAggregator
from ingest.events import Event, EventBlock, EventKind, TraceFormat, TraceHeader
from ingest.guard import MAX_NAME_CHARS
from tests.conftest import CORPUS, DATA, REPO

SIZES = (1, 7, 1000, 32768)
# Files past this many events skip blocks of one (the small files cover them) to keep CI short.
LARGE = 50_000
ROCPROF = DATA / "rocprof"


def _files() -> list[Path]:
    files = sorted((DATA / "torch").glob("*.pt.trace.json.gz"))
    files += sorted((DATA / "ddp").glob("*.pt.trace.json.gz"))
    files += sorted((DATA / "nsys").glob("*.sqlite")) + sorted((DATA / "ncu").glob("*.csv"))
    files += [
        ROCPROF / "4242_results.db", ROCPROF / "4242_results.json", ROCPROF / "v1_old_results.csv",
        ROCPROF / "v3_old_kernel_trace.csv", ROCPROF / "v3_run.zip", ROCPROF / "v1" / "results.csv",
        *sorted((ROCPROF / "v2").glob("*.csv")),
    ]  # fmt: skip
    files.append(REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz")
    if CORPUS.is_dir():
        for sub in ("kineto", "h200", "rocprof_v1", "rocprofv3"):
            files += sorted(f for f in (CORPUS / sub).iterdir() if f.suffix != ".md")
    return files


def _events(path: Path) -> tuple[TraceHeader, list[Event]]:
    try:
        with parse_file(path) as parsed:
            return parsed.header, list(parsed.events)
    except IngestError as e:
        pytest.skip(f"not a trace perfdash reads: {e}")


def _results(items: list[Any], header: TraceHeader) -> dict[str, Any]:
    aggregator = TraceAggregator()
    aggregator.drain(iter(items))
    stats = aggregator.stats
    return {
        "events": aggregator.events, "counts": dict(stats.counts),
        "span": (stats.start_ns, stats.end_ns, stats.duration_ns),
        "kernels": stats.kernels(), "top10": stats.kernels(top=10),
        "summary": aggregator.summary(header), "groups": aggregator.kernel_groups(),
    }  # fmt: skip


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_blocks_give_the_aggregates_of_their_events(path: Path) -> None:
    header, events = _events(path)
    if not events:
        pytest.skip("no events")
    sizes = SIZES if len(events) <= LARGE else SIZES[1:]
    regrouped = {size: regroup(events, size) for size in sizes}  # before the guard renames
    expected = _results(events, header)
    for size, items in regrouped.items():
        assert sum(len(i) if isinstance(i, EventBlock) else 1 for i in items) == len(events)
        assert _results(items, header) == expected, f"blocks of {size}"


def test_summarised_and_collective_rows_keep_their_kernel_index() -> None:
    """Rows standing for several launches (`invocations`) and collectives with metadata,
    in one block, land where the row path puts them."""
    comm = {"Collective name": "allreduce", "In msg nelems": 10, "dtype": "Float"}
    rows = [
        Event(EventKind.KERNEL, "gemm", 0, 10, 0, 7, correlation=1),
        Event(
            EventKind.KERNEL,
            "avg",
            20,
            5,
            0,
            7,
            args={"invocations": 3, "duration_min_ns": 2, "duration_max_ns": 9.6},
        ),
        Event(EventKind.KERNEL, "ncclKernel_AllReduce", 30, 4, 0, 8, args=comm),
        Event(EventKind.KERNEL, "gemm", 40, 12, 0, 7, args={"grid": [1, 2, 3]}),
        Event(EventKind.KERNEL, "avg", 60, 7, 0, 7, args={"invocations": 0}),
        Event(EventKind.KERNEL, "x", 70, 1, 0, 8, args={**comm, "invocations": 2}),
        Event(EventKind.KERNEL, "ncclKernel_AllReduce", 80, 4, 0, 8, args=comm),
    ]
    header = TraceHeader(format=TraceFormat.KINETO)
    expected = _results(rows, header)
    assert expected["summary"]["communication"]["kernels"] == 4  # x counts twice
    for cut in range(1, len(rows) + 1):
        blocks = [to_block(rows[i : i + cut]) for i in range(0, len(rows), cut)]
        assert _results(blocks, header) == expected, cut


def test_hostile_names_in_blocks_are_fixed_or_refused_as_in_events() -> None:
    """NUL characters become U+FFFD and an over-long name stops the ingest, naming the row:
    the same for a block as for its rows one at a time."""
    rows = [Event(EventKind.CPU_OP, n, i, 1, tid=1) for i, n in enumerate(["a", "b\x00c", "a"])]
    header = TraceHeader(format=TraceFormat.KINETO)
    assert _results([to_block(rows)], header) == _results(rows, header)
    long = Event(EventKind.KERNEL, "k" * (MAX_NAME_CHARS + 1), 5, 1)
    for items in ([*rows, long], [to_block(rows), to_block([rows[0], long])]):
        with pytest.raises(ParseError) as error:
            TraceAggregator().drain(iter(items))  # type: ignore[arg-type]
        assert error.value.location == ("event 3" if len(items) == 4 else "event 4")


def test_memory_events_and_blocks_mixed_keep_their_order() -> None:
    """2021-style memory events (a running sum of `Bytes`) as single events, then a block,
    then events: the running total follows stream order."""
    rows = [
        Event(EventKind.MEMORY, "[memory]", i, 0, args={"Device Id": 0, "Bytes": b})
        for i, b in enumerate([100, -40, 7, 1000, -500, 3])
    ]
    header = TraceHeader(format=TraceFormat.KINETO)
    mixed = [rows[0], rows[1], to_block(rows[2:4]), rows[4], to_block(rows[5:])]
    expected = _results(rows, header)
    assert expected["summary"]["memory"][0]["peak_allocated_bytes"] == 1067
    assert _results(mixed, header) == expected

"""The Kineto parser's `EventBlock` stream (issue #17): every kind's events in the file's
order, checked against the raw JSON read with the standard library; blocks bounded and the
kinds flushed together; what was read before damage still handed out; empty columns None;
a trace's rank stamped on the columns."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from ingest import ParseError, parse_file
from ingest.aggregate import TraceAggregator
from ingest.events import EventBlock, EventKind
from ingest.parsers import _json_stream, _kineto_blocks
from ingest.parsers.kineto import CATEGORY_KINDS
from tests.ingest.kineto_files import DATA

TRACES = [DATA / "torch" / f"{n}.pt.trace.json.gz" for n in ("h200_train_step", "h200_gpt_small")]
_ORDER = {kind: i for i, kind in enumerate(EventKind)}


def _expected(path: Path) -> dict[EventKind, list[tuple[str, int]]]:
    """Per kind, (name, start ns) of each event in the file's order, from `json.loads`."""
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    base = doc.get("baseTimeNanoseconds", 0)
    out: dict[EventKind, list[tuple[str, int]]] = {}
    for e in doc["traceEvents"]:
        kind = CATEGORY_KINDS.get(e.get("cat"))  # both fixtures give every memory event a cat
        if kind is not None:
            out.setdefault(kind, []).append((e["name"], base + int(Decimal(e["ts"]) * 1000)))
    return out


def _blocks(path: Path) -> list[EventBlock]:
    """The parser's stream, which holds blocks only."""
    items = list(parse_file(path).items)
    blocks = [item for item in items if isinstance(item, EventBlock)]
    assert blocks == items
    return blocks


def _by_kind(items: list[EventBlock]) -> dict[EventKind, list[tuple[str, int]]]:
    out: dict[EventKind, list[tuple[str, int]]] = {}
    for block in items:
        out.setdefault(block.kind, []).extend(zip(block.name, block.start_ns, strict=True))
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_each_kind_keeps_the_files_order(path: Path) -> None:
    parsed = parse_file(path)
    items = list(parsed.items)
    assert items and all(type(item) is EventBlock for item in items)
    assert parsed.report.skipped == 0
    assert _by_kind(_blocks(path)) == _expected(path)


def test_blocks_are_bounded_and_every_kind_goes_out_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_kineto_blocks, "BLOCK_ROWS", 100)
    monkeypatch.setattr(_json_stream, "PIECE_BYTES", 2000)  # a handful of events a piece
    path = TRACES[1]
    items = _blocks(path)
    assert max(map(len, items)) < 150  # the bound, plus at most one piece
    rounds = _rounds(items)
    assert len(rounds) > 10
    for kinds in rounds[:-1]:  # every flush but the last was forced by a full kind
        assert max(len(b) for b in kinds) >= 100
    assert _by_kind(items) == _expected(path)


def _rounds(items: list[EventBlock]) -> list[list[EventBlock]]:
    """The stream cut where a kind's order (`EventKind`) goes back: one flush each."""
    rounds: list[list[EventBlock]] = []
    for block in items:
        if not rounds or _ORDER[block.kind] <= _ORDER[rounds[-1][-1].kind]:
            rounds.append([])
        rounds[-1].append(block)
    return rounds


def test_what_was_read_before_damage_comes_out_before_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_kineto_blocks, "BLOCK_ROWS", 1 << 30)  # nothing flushed before it
    path = TRACES[1]
    text = gzip.decompress(path.read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) // 2])
    items: list[EventBlock] = []
    with pytest.raises(ParseError):
        for item in parse_file(cut).items:
            assert isinstance(item, EventBlock)
            items.append(item)
    whole = _expected(path)
    got = _by_kind(items)
    assert sum(map(len, got.values())) > 100
    for kind, events in got.items():
        assert events == whole[kind][: len(events)]


def _trace(tmp_path: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**top, "traceEvents": events}))
    return path


def test_a_column_none_in_every_row_is_none(tmp_path: Path) -> None:
    ops = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": i, "dur": 1}
           for i in range(3)]  # fmt: skip
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1,
              "args": {"correlation": 9, "stream": 7, "device": 0, "grid": [1, 1, 1]}}  # fmt: skip
    blocks = {b.kind: b for b in _blocks(_trace(tmp_path, [*ops, kernel]))}
    op, k = blocks[EventKind.CPU_OP], blocks[EventKind.KERNEL]
    assert (op.correlation, op.args, op.device, op.stream) == (None, None, None, None)
    assert (list(op.column(op.pid)), list(op.column(op.tid))) == ([1, 1, 1], [2, 2, 2])
    assert (k.pid, k.tid) == (None, None)
    assert (list(k.column(k.device)), list(k.column(k.stream))) == ([0], [7])
    assert list(k.column(k.correlation)) == [9]
    assert list(k.column(k.args)) == [{"grid": [1, 1, 1]}]


def test_the_traces_rank_is_stamped_on_the_columns(tmp_path: Path) -> None:
    ops = [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 2, "ts": i, "dur": 1}
           for i in range(4)]  # fmt: skip
    path = _trace(tmp_path, ops, distributedInfo={"rank": 3, "world_size": 4})
    (block,) = _blocks(path)
    assert list(block.column(block.rank)) == [3] * 4
    assert {e.rank for e in parse_file(path).events} == {3}


def test_blocks_read_as_events_match_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ParsedTrace.events` (one `Event` per row) is the blocks' rows, kind after kind."""
    monkeypatch.setattr(_kineto_blocks, "BLOCK_ROWS", 1000)
    path = TRACES[1]
    rows = [(b.kind, *r) for b in _blocks(path) for r in _block_rows(b)]
    events = [(e.kind, e.name, e.start_ns, e.dur_ns) for e in parse_file(path).events]
    assert rows == events
    kinds = [kind for kind, _ in groupby(r[0] for r in rows)]
    assert len(kinds) > len(set(kinds))  # kinds interleave block by block


def _block_rows(block: EventBlock) -> list[tuple[str, int, int]]:
    return list(zip(block.name, block.start_ns, block.dur_ns, strict=True))


def _aggregates(path: Path) -> tuple[Any, ...]:
    parsed = parse_file(path)
    aggregator = TraceAggregator()
    aggregator.drain(parsed.items)
    summary = aggregator.summary(parsed.header)
    groups = [g.as_dict() for g in aggregator.kernel_groups()]
    kernels = [k.as_dict() for k in aggregator.stats.kernels()]
    return summary, groups, kernels, dict(aggregator.stats.counts), aggregator.stats.duration_ns


@pytest.mark.parametrize(
    "path", [TRACES[1], DATA / "ddp" / "ddp_rank0.pt.trace.json.gz"], ids=lambda p: p.name
)
def test_aggregates_do_not_depend_on_how_kinds_interleave(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored summary, kernel stats and groups from blocks are those of the events in the
    file's order (one element a piece, one row a block), NCCL message sizes included."""
    blocks = _aggregates(path)
    monkeypatch.setattr(_json_stream, "PIECE_BYTES", 64)  # one element a piece
    monkeypatch.setattr(_kineto_blocks, "BLOCK_ROWS", 1)
    assert _aggregates(path) == blocks

"""The ingest's Arrow batches (`loading.batches.event_batches`) against the row form the
ingest stored before them, built here one event at a time from `Event`s and from each
block's `events()`: same ids (from 1, parser order), same values, args as the same JSON
text, whatever the mix of events and blocks and wherever the batches are cut."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pyarrow as pa
import pytest

from backend.services.datasets import EVENT_SCHEMA
from backend.services.loading import batches
from backend.services.loading.batches import event_batches
from ingest import Event, EventKind, parse_file
from ingest.events import EventBlock, flatten

NSYS = Path(__file__).resolve().parents[1] / "data" / "nsys" / "train_step.sqlite"


def _expected(items: Iterable[Event | EventBlock]) -> list[dict[str, Any]]:
    """Each event as the former row code made it (args: `orjson.dumps(...).decode()`)."""
    return [
        {
            "id": i, "kind": e.kind.value, "name": e.name, "start_ns": e.start_ns,
            "dur_ns": e.dur_ns, "rank": e.rank, "device": e.device, "stream": e.stream,
            "pid": e.pid, "tid": e.tid, "correlation": e.correlation,
            "args": orjson.dumps(e.args).decode() if e.args else None,
        }
        for i, e in enumerate(flatten(iter(items)), start=1)
    ]  # fmt: skip


def _rows(items: list[Event | EventBlock], size: int) -> list[dict[str, Any]]:
    out = list(event_batches(items, size=size))
    assert all(b.schema == EVENT_SCHEMA for b in out)
    assert all(b.num_rows == size for b in out[:-1]), "every batch but the last is full"
    assert not out or 0 < out[-1].num_rows <= size
    rows: list[dict[str, Any]] = pa.Table.from_batches(out, schema=EVENT_SCHEMA).to_pylist()
    return rows


def _event(i: int, **extra: Any) -> Event:
    return Event(EventKind.CPU_OP, f"op{i}", 1000 + i, 5, pid=7, tid=8, **extra)


SHARED = {"api": "cudaLaunchKernel"}


def _block(n: int, base: int, **columns: Any) -> EventBlock:
    return EventBlock(
        kind=EventKind.RUNTIME,
        name=[f"call{base + i}" for i in range(n)],
        start_ns=[base + 10 * i for i in range(n)],
        dur_ns=[3] * n,
        **columns,
    )


def _mixed() -> list[Event | EventBlock]:
    return [
        _event(1, args={"Input Dims": [[2, 3]], "ü": "é"}),
        _event(2),
        _block(4, 100, pid=[1, 1, 2, None], tid=(5, 5, 6, 6), correlation=[9, None, 11, 12],
               args=[SHARED, {}, SHARED, None], device=None, rank=[0, 0, 0, 0]),
        _block(0, 200),  # an empty block takes no id
        _event(3, device=1, stream=7, correlation=99, args={}),
        *[_event(i, args={"n": i}) for i in range(4, 9)],
        _block(3, 300),  # every optional column absent
        _event(9),
    ]  # fmt: skip


@pytest.mark.parametrize("size", [1, 2, 3, 5, 13, 1000])
def test_events_and_blocks_mixed_give_the_former_rows(size: int) -> None:
    items = _mixed()
    assert _rows(items, size) == _expected(items)


def test_empty_input_gives_no_batch() -> None:
    assert list(event_batches([])) == []
    assert list(event_batches([_block(0, 0), _block(0, 5)])) == []


def test_absent_and_none_columns_are_nulls() -> None:
    rows = _rows([_block(3, 300, device=[None, 1, None])], 10)
    assert [r["device"] for r in rows] == [None, 1, None]
    assert {r[c] for r in rows for c in ("rank", "stream", "pid", "tid", "correlation")} == {None}
    assert {r["args"] for r in rows} == {None}


@pytest.mark.parametrize("size", [256, 4096])  # the block converted whole, or gathered
def test_args_shared_by_a_block_are_serialised_once(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A parser's constant args dict, shared by every row of a block, is one JSON text;
    equal but distinct dicts give equal text; an empty dict is null, as for an `Event`."""
    calls = []

    def dumps(value: Any) -> bytes:
        calls.append(value)
        return orjson.dumps(value)

    monkeypatch.setattr(batches, "orjson", SimpleNamespace(dumps=dumps))
    n = 1000
    args = [SHARED if i % 3 else {"api": "cudaLaunchKernel"} for i in range(n)]
    args[5] = {}
    rows = _rows([_block(n, 0, args=args)], size)
    assert len(calls) == 1 + sum(1 for a in args if a is not SHARED and a)  # once each
    assert [r["args"] for r in rows] == [orjson.dumps(a).decode() if a else None for a in args]


def test_a_parsed_trace_with_blocks_gives_the_former_rows() -> None:
    """nsys's runtime calls come as blocks, its kernels and ranges as events."""
    with parse_file(NSYS) as parsed:
        items = list(parsed.items)
    assert any(isinstance(i, EventBlock) for i in items)
    assert any(isinstance(i, Event) for i in items)
    assert _rows(items, 777) == _expected(items)


def test_an_integer_beyond_its_column_type_is_refused() -> None:
    """As the former writer did when it converted the rows: never silently wrapped."""
    with pytest.raises((OverflowError, pa.ArrowInvalid)):
        list(event_batches([_event(1, device=2**40)]))
    with pytest.raises((OverflowError, pa.ArrowInvalid)):
        list(event_batches([_block(2, 0, device=[0, 2**40])]))

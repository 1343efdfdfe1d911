"""Any stored trace as Chrome trace JSON (the Kineto flavour Perfetto UI and perfdash read).

Events stream out of the database in id order, a batch at a time, so exporting a
multi-million-event trace needs no more memory than one batch. Times are written in µs
relative to `baseTimeNanoseconds` (the trace start, floored to a µs), which keeps every
nanosecond exact in a float64 for traces up to days long; GPU events use pid = device and
tid = stream as Kineto does, so the export of an nsys or rocprof trace reads back
through perfdash's Kineto parser with the same kernels.

Public surface: `export_chrome_trace`.
"""

from collections.abc import Iterator
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Engine

from backend.models.events import TraceEvent
from backend.models.timeline import table_of
from backend.models.traces import Trace

_BATCH = 5_000
_EVENTS = table_of(TraceEvent)
CATEGORIES = {
    "kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
    "runtime": "cuda_runtime", "cpu_op": "cpu_op", "annotation": "user_annotation",
    "gpu_annotation": "gpu_user_annotation", "memory": "cpu_instant_event",
    "sync": "cuda_sync", "python": "python_function",
}  # fmt: skip
_GPU_KINDS = frozenset({"kernel", "memcpy", "memset", "gpu_annotation", "sync"})


def export_chrome_trace(engine: Engine, trace: Trace) -> Iterator[bytes]:
    """Yield the trace as Chrome trace JSON, in chunks.

    Args:
        engine: where the events are; the generator opens its own connection, so it can
            outlive the request's session.
        trace: a ready trace.
    """
    base = (trace.start_ns or 0) // 1000 * 1000
    header = {
        "schemaVersion": 1,
        "displayTimeUnit": "ns",
        "baseTimeNanoseconds": base,
        "traceName": trace.name,
        "deviceProperties": [_device(d) for d in trace.devices],
        **{k: v for k, v in trace.trace_metadata.items() if k == "distributedInfo"},
    }
    yield orjson.dumps(header)[:-1] + b',"traceEvents":['
    gpus: set[tuple[int, int]] = set()
    first = True
    for batch in _batches(engine, trace.id):
        chunk = []
        for row in batch:
            chunk.append(orjson.dumps(_event(row, base)))
            if row.kind in _GPU_KINDS and row.device is not None and row.stream is not None:
                gpus.add((row.device, row.stream))
        yield (b"" if first else b",") + b",".join(chunk)
        first = False
    meta = [orjson.dumps(m) for m in _metadata(gpus)]
    yield (b"" if first or not meta else b",") + b",".join(meta) + b"]}"


def _batches(engine: Engine, trace_id: str) -> Iterator[list[Any]]:
    last = -1
    with engine.connect() as conn:
        while True:
            rows = list(
                conn.execute(
                    select(_EVENTS)
                    .where(_EVENTS.c.trace_id == trace_id, _EVENTS.c.id > last)
                    .order_by(_EVENTS.c.id)
                    .limit(_BATCH)
                )
            )
            if not rows:
                return
            last = rows[-1].id
            yield rows


def _event(row: Any, base: int) -> dict[str, Any]:
    args = dict(row.args or {})
    if row.correlation is not None:
        args["correlation"] = row.correlation
    gpu = row.kind in _GPU_KINDS
    if gpu:
        args["device"], args["stream"] = row.device, row.stream
    event: dict[str, Any] = {
        "ph": "i" if row.kind == "memory" else "X",
        "cat": CATEGORIES.get(row.kind, row.kind),
        "name": row.name,
        "pid": (row.device if gpu else row.pid) or 0,
        "tid": (row.stream if gpu else row.tid) or 0,
        "ts": (row.start_ns - base) / 1000,
        "args": args,
    }
    if row.kind == "memory":
        event["s"] = "t"
    else:
        event["dur"] = row.dur_ns / 1000
    return event


def _device(device: dict[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in device.items() if k != "index"}
    return {**props, "id": device.get("index", props.get("id", 0))}


def _metadata(gpus: set[tuple[int, int]]) -> Iterator[dict[str, Any]]:
    """Process and thread names, so Perfetto labels GPU tracks as Kineto traces do."""
    for device in sorted({d for d, _ in gpus}):
        yield {"ph": "M", "name": "process_name", "pid": device, "args": {"name": f"GPU {device}"}}
    for device, stream in sorted(gpus):
        yield {
            "ph": "M", "name": "thread_name", "pid": device, "tid": stream,
            "args": {"name": f"stream {stream} "},
        }  # fmt: skip

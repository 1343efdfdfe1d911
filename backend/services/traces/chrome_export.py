"""Any stored trace as Chrome trace JSON (the Kineto flavour Perfetto UI and perfdash read).

Events stream out of the trace's dataset in its stored order, a batch at a time, so
exporting a multi-million-event trace needs no more memory than one batch. Times are written in µs
relative to `baseTimeNanoseconds` (the trace start, floored to a µs), which keeps every
nanosecond exact in a float64 for traces up to days long; GPU events use pid = device and
tid = stream as Kineto does, so the export of an nsys or rocprof trace reads back
through perfdash's Kineto parser with the same kernels.

Public surface: `export_chrome_trace`.
"""

from collections.abc import Iterator
from typing import Any

import orjson

from backend.models.traces import Trace
from backend.services.datasets import scan_events

CATEGORIES = {
    "kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
    "runtime": "cuda_runtime", "cpu_op": "cpu_op", "annotation": "user_annotation",
    "gpu_annotation": "gpu_user_annotation", "memory": "cpu_instant_event",
    "sync": "cuda_sync", "python": "python_function",
}  # fmt: skip
_GPU_KINDS = frozenset({"kernel", "memcpy", "memset", "gpu_annotation", "sync"})


def export_chrome_trace(trace: Trace) -> Iterator[bytes]:
    """The trace (a ready one) as Chrome trace JSON, in chunks.

    Raises:
        NotFoundError: the trace has no dataset (raised at once, before any byte).
    """
    return _chunks(trace, scan_events(trace))


def _chunks(trace: Trace, batches: Iterator[list[dict[str, Any]]]) -> Iterator[bytes]:
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
    for batch in batches:
        chunk = []
        for row in batch:
            chunk.append(orjson.dumps(_event(row, base)))
            device, stream = row["device"], row["stream"]
            if row["kind"] in _GPU_KINDS and device is not None and stream is not None:
                gpus.add((device, stream))
        yield (b"" if first else b",") + b",".join(chunk)
        first = False
    meta = [orjson.dumps(m) for m in _metadata(gpus)]
    yield (b"" if first or not meta else b",") + b",".join(meta) + b"]}"


def _event(row: dict[str, Any], base: int) -> dict[str, Any]:
    kind = row["kind"]
    args = orjson.loads(row["args"]) if row["args"] else {}
    if row["correlation"] is not None:
        args["correlation"] = row["correlation"]
    gpu = kind in _GPU_KINDS
    if gpu:
        args["device"], args["stream"] = row["device"], row["stream"]
    event: dict[str, Any] = {
        "ph": "i" if kind == "memory" else "X",
        "cat": CATEGORIES.get(kind, kind),
        "name": row["name"],
        "pid": (row["device"] if gpu else row["pid"]) or 0,
        "tid": (row["stream"] if gpu else row["tid"]) or 0,
        "ts": (row["start_ns"] - base) / 1000,
        "args": args,
    }
    if kind == "memory":
        event["s"] = "t"
    else:
        event["dur"] = row["dur_ns"] / 1000
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

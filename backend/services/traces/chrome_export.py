"""Any stored trace as Chrome trace JSON (the Kineto flavour Perfetto UI and perfdash read).

DuckDB writes each event, and each CPU launch → GPU work flow (`ph` `s`/`f`, Kineto's
`ac2g`), as a line of JSON text straight from the trace's dataset (`chrome_lines.py`);
the lines stream out a batch at a time, so exporting a multi-million-event trace needs no
more memory than one batch and no Python object per event. Times are written in µs
relative to `baseTimeNanoseconds` (the trace start, floored to a µs), exact to the ns;
GPU events use pid = device and tid = stream as Kineto does, so the export of an nsys or
rocprof trace reads back through perfdash's Kineto parser with the same kernels.

Public surface: `export_chrome_trace`.
"""

from collections.abc import Iterator
from itertools import chain
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from backend.models.traces import Trace
from backend.services.datasets import arrow_batches_of_events, query_events
from backend.services.traces.chrome_lines import EVENTS_SQL, FLOWS_SQL, GPU_STREAMS_SQL


def export_chrome_trace(trace: Trace) -> Iterator[bytes]:
    """The trace (a ready one) as Chrome trace JSON, in chunks.

    Raises:
        NotFoundError: the trace has no dataset (raised at once, before any byte).
    """
    base = (trace.start_ns or 0) // 1000 * 1000
    gpus = sorted(query_events(trace, GPU_STREAMS_SQL))
    events = arrow_batches_of_events(trace, EVENTS_SQL, [base])
    flows = arrow_batches_of_events(trace, FLOWS_SQL, [base])
    return _chunks(trace, base, chain(events, flows), gpus)


def _chunks(
    trace: Trace, base: int, batches: Iterator[pa.RecordBatch], gpus: list[tuple[int, int]]
) -> Iterator[bytes]:
    header = {
        "schemaVersion": 1,
        "displayTimeUnit": "ns",
        "baseTimeNanoseconds": base,
        "traceName": trace.name,
        "deviceProperties": [_device(d) for d in trace.devices],
        **{k: v for k, v in trace.trace_metadata.items() if k == "distributedInfo"},
    }
    yield orjson.dumps(header)[:-1] + b',"traceEvents":['
    empty = True
    for batch in batches:
        if batch.num_rows:
            yield (b"" if empty else b",") + _joined(batch.column(0))
            empty = False
    meta = [orjson.dumps(m) for m in _metadata(gpus)]
    yield (b"" if empty or not meta else b",") + b",".join(meta) + b"]}"


def _joined(lines: pa.Array) -> bytes:
    """A batch's lines joined by commas, in Arrow (one list of all of them, joined)."""
    whole = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
    joined: bytes = pc.binary_join(whole, ",")[0].as_buffer().to_pybytes()
    return joined


def _device(device: dict[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in device.items() if k != "index"}
    return {**props, "id": device.get("index", props.get("id", 0))}


def _metadata(gpus: list[tuple[int, int]]) -> Iterator[dict[str, Any]]:
    """Process and thread names, so Perfetto labels GPU tracks as Kineto traces do."""
    for device in sorted({d for d, _ in gpus}):
        yield {"ph": "M", "name": "process_name", "pid": device, "args": {"name": f"GPU {device}"}}
    for device, stream in gpus:
        yield {
            "ph": "M", "name": "thread_name", "pid": device, "tid": stream,
            "args": {"name": f"stream {stream} "},
        }  # fmt: skip

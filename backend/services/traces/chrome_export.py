"""Any stored trace as Chrome trace JSON (the Kineto flavour Perfetto UI and perfdash read).

DuckDB writes each event, each CPU launch → GPU work flow (`ph` `s`/`f`, Kineto's
`ac2g`, rebuilt from correlation ids for every format) and each flow the source carried
(Kineto's forward → backward `fwdbwd`), as a line of JSON text straight from the trace's
dataset (`chrome_lines.py`);
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

from backend.models.traces import Trace
from backend.services.datasets import arrow_batches_of_events, flows_file, query_events
from backend.services.traces.chrome_lines import (
    EVENTS_SQL,
    FLOWS_SQL,
    GPU_STREAMS_SQL,
    SOURCE_FLOWS_SQL,
)


def export_chrome_trace(trace: Trace) -> Iterator[bytes]:
    """The trace (a ready one) as Chrome trace JSON, in chunks.

    Raises:
        NotFoundError: the trace has no dataset (raised at once, before any byte).
    """
    base = (trace.start_ns or 0) // 1000 * 1000
    gpus = sorted(query_events(trace, GPU_STREAMS_SQL))
    events = arrow_batches_of_events(trace, EVENTS_SQL, [base])
    flows = arrow_batches_of_events(trace, FLOWS_SQL, [base])
    source: Iterator[pa.RecordBatch] = iter(())
    if flows_file(trace) is not None:
        source = arrow_batches_of_events(trace, SOURCE_FLOWS_SQL, [base])
    return _chunks(trace, base, chain(events, flows, source), gpus)


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
    first = True
    for batch in batches:
        if batch.num_rows:
            text = _text(batch.column(0))
            yield text[1:] if first else text  # the file's first event has no comma before it
            first = False
    meta = [orjson.dumps(m) for m in _metadata(gpus)]
    yield (b"" if first or not meta else b",") + b",".join(meta) + b"]}"


def _text(lines: pa.Array) -> bytes:
    """A batch's lines (each led by its comma) as one bytes: the span of Arrow's value
    buffer they occupy, copied once, with no join."""
    if not (pa.types.is_string(lines.type) or pa.types.is_large_string(lines.type)):
        lines = lines.cast(pa.large_string())  # e.g. a string view from a newer DuckDB
    width = pa.int64() if pa.types.is_large_string(lines.type) else pa.int32()
    _validity, offset_buffer, values = lines.buffers()
    offsets = pa.Array.from_buffers(
        width, len(lines) + 1, [None, offset_buffer], offset=lines.offset
    )
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    text: bytes = values[start:end].to_pybytes()
    return text


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

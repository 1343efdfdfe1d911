"""The views a trace's SQL reads: stable names over the dataset's one `events` table.

Every format's parser writes the same columns (`backend.services.datasets.EVENT_SCHEMA`),
with the source's own attributes as JSON in `args`; the views pull the attributes queries
need most into typed columns, so the same SQL works on a Kineto, nsys or rocprof trace.
A column a source does not have is null. `DATASET` is the view of the trace's
`events.parquet` they read; queries see it too, and it holds only this trace's events.

Public surface: `DATASET`, `VIEWS`, `View`.
"""

from __future__ import annotations

from dataclasses import dataclass

DATASET = "_dataset"
_GPU_WORK = "('kernel', 'memcpy', 'memset')"


@dataclass(frozen=True, slots=True)
class View:
    """One documented view: its SQL (over `DATASET`) and what each column means."""

    name: str
    description: str
    sql: str
    columns: dict[str, str]


def _arg(key: str, sql_type: str) -> str:
    """A typed value from the `args` JSON, null where absent or of another type."""
    return f"TRY_CAST(args->>'$.\"{key}\"' AS {sql_type})"


def _dim(key: str, index: int) -> str:
    return f"TRY_CAST(args->>'$.\"{key}\"[{index}]' AS BIGINT)"


_EVENT_COLUMNS = {
    "id": "The event's number in the trace, from 1 in the source's order.",
    "kind": "kernel, memcpy, memset, runtime, cpu_op, annotation, gpu_annotation, memory, "
    "sync or python.",
    "name": "Kernel, op, API call or annotation name.",
    "start_ns": "Start, integer ns on the trace's clock.",
    "dur_ns": "Duration, integer ns.",
    "rank": "Distributed rank; null for a single-rank trace.",
    "device": "GPU index (GPU kinds).",
    "stream": "GPU stream (GPU kinds).",
    "pid": "Process id (CPU kinds).",
    "tid": "Thread id (CPU kinds).",
    "correlation": "Links a runtime call to the GPU work it launched.",
    "args": "The source's kept attributes as JSON (also unnested in `args`).",
}
# What the `kernels` and `copies` views share: GPU work launched from a runtime call.
_GPU_WORK_COLUMNS = {
    "start_ns": "Start, integer ns.",
    "dur_ns": "Duration, integer ns.",
    "rank": "Distributed rank.",
    "device": "GPU index.",
    "stream": "GPU stream.",
    "correlation": "Correlation id of the launching runtime call.",
}
_KERNEL_COLUMNS = {
    "id": "The event's id (joins `events.id`).",
    "name": "Kernel name.",
    **_GPU_WORK_COLUMNS,
    "grid_x": "Grid size in blocks, x.",
    "grid_y": "Grid size in blocks, y.",
    "grid_z": "Grid size in blocks, z.",
    "block_x": "Block size in threads, x.",
    "block_y": "Block size in threads, y.",
    "block_z": "Block size in threads, z.",
    "registers_per_thread": "Registers per thread (AMD: architectural VGPRs).",
    "shared_memory_bytes": "Shared memory per block, static + dynamic (AMD: LDS), bytes.",
    "blocks_per_sm": "Blocks per SM (Kineto).",
    "warps_per_sm": "Warps per SM (Kineto).",
    "occupancy_pct": "Estimated achieved (theoretical) occupancy, % (Kineto).",
}
_KERNEL_SQL = f"""
SELECT id, name, start_ns, dur_ns, rank, device, stream, correlation,
  {_dim("grid", 0)} AS grid_x, {_dim("grid", 1)} AS grid_y, {_dim("grid", 2)} AS grid_z,
  {_dim("block", 0)} AS block_x, {_dim("block", 1)} AS block_y,
  {_dim("block", 2)} AS block_z,
  COALESCE({_arg("registers per thread", "BIGINT")}, {_arg("arch_vgpr", "BIGINT")})
    AS registers_per_thread,
  COALESCE({_arg("shared memory", "BIGINT")}, {_arg("lds_bytes", "BIGINT")})
    AS shared_memory_bytes,
  {_arg("blocks per SM", "DOUBLE")} AS blocks_per_sm,
  {_arg("warps per SM", "DOUBLE")} AS warps_per_sm,
  {_arg("est. achieved occupancy %", "DOUBLE")} AS occupancy_pct
FROM {DATASET} WHERE kind = 'kernel'
"""
_FLOW_COLUMNS = {
    "launch_id": "The runtime call's event id (the outermost one, where a runtime call "
    "and the driver call inside it share the correlation id).",
    "gpu_id": "The GPU event's id.",
    "launch_name": "The runtime call (cudaLaunchKernel, cuLaunchKernel, ...).",
    "gpu_kind": "kernel, memcpy or memset.",
    "gpu_name": "The GPU event's name.",
    "launch_start_ns": "Start of the runtime call.",
    "launch_dur_ns": "Duration of the runtime call.",
    "gpu_start_ns": "Start of the GPU work.",
    "gpu_dur_ns": "Duration of the GPU work.",
    "launch_delay_ns": "gpu_start_ns - launch_start_ns.",
    "rank": "Distributed rank.",
    "pid": "Process of the runtime call.",
    "tid": "Thread of the runtime call.",
    "device": "GPU index.",
    "stream": "GPU stream.",
    "correlation": "The shared correlation id.",
}
_FLOW_SQL = f"""
SELECT l.id AS launch_id, g.id AS gpu_id, l.name AS launch_name, g.kind AS gpu_kind,
  g.name AS gpu_name, l.start_ns AS launch_start_ns, l.dur_ns AS launch_dur_ns,
  g.start_ns AS gpu_start_ns, g.dur_ns AS gpu_dur_ns,
  g.start_ns - l.start_ns AS launch_delay_ns, g.rank, l.pid, l.tid, g.device, g.stream,
  g.correlation
FROM {DATASET} AS g JOIN {DATASET} AS l
  ON l.correlation = g.correlation AND l.rank IS NOT DISTINCT FROM g.rank
WHERE g.kind IN {_GPU_WORK} AND l.kind = 'runtime'
QUALIFY row_number() OVER (PARTITION BY g.id ORDER BY l.start_ns, l.id) = 1
"""
_COUNTER_COLUMNS = {
    "event_id": "The event's id.",
    "kind": "The event's kind (memory for allocator events).",
    "name": "The event's name.",
    "start_ns": "When the value was recorded.",
    "rank": "Distributed rank.",
    "device": "GPU index (from the event, or its `Device Id`).",
    "counter": "What is counted: Total Allocated, Total Reserved, Bytes, ...",
    "value": "The value.",
}
# Numeric attributes of allocator events; identifiers (address, device) are not counts.
_COUNTER_SQL = f"""
SELECT e.id AS event_id, e.kind, e.name, e.start_ns, e.rank,
  COALESCE(e.device, TRY_CAST(e.args->>'$."Device Id"' AS INTEGER)) AS device,
  j.key AS counter, TRY_CAST(j.value AS DOUBLE) AS value
FROM {DATASET} AS e, json_each(e.args) AS j
WHERE e.kind = 'memory' AND json_type(j.value) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
  AND j.key NOT IN ('Addr', 'Device Id', 'Device Type')
"""
_COPY_COLUMNS = {
    "id": "The event's id.",
    "kind": "memcpy or memset.",
    "name": "The source's name for the copy.",
    **_GPU_WORK_COLUMNS,
    "bytes": "Bytes copied or set.",
    "copy_kind": "HtoD, DtoH, DtoD, ... (memcpy).",
    "src_kind": "Source memory: Pageable, Pinned, Device, ...",
    "dst_kind": "Destination memory.",
}
_COPY_SQL = f"""
SELECT id, kind, name, start_ns, dur_ns, rank, device, stream, correlation,
  {_arg("bytes", "BIGINT")} AS bytes,
  COALESCE(args->>'$."copy kind"', NULLIF(regexp_extract(name, 'Memcpy (\\w+)', 1), ''),
    CASE WHEN name LIKE '%Host-to-Device%' THEN 'HtoD'
         WHEN name LIKE '%Device-to-Host%' THEN 'DtoH'
         WHEN name LIKE '%Device-to-Device%' THEN 'DtoD'
         WHEN name LIKE '%Peer-to-Peer%' THEN 'PtoP' END) AS copy_kind,
  COALESCE(args->>'$."src kind"', NULLIF(regexp_extract(name, '\\((\\w+) ->', 1), ''))
    AS src_kind,
  COALESCE(args->>'$."dst kind"', args->>'$."memory kind"',
    NULLIF(regexp_extract(name, '-> (\\w+)\\)', 1), ''),
    NULLIF(regexp_extract(name, 'Memset \\((\\w+)\\)', 1), '')) AS dst_kind
FROM {DATASET} WHERE kind IN ('memcpy', 'memset')
"""
_ARG_COLUMNS = {
    "event_id": "The event's id.",
    "key": "Attribute name, as the source spells it.",
    "value": "Its value, as JSON.",
}
_ARG_SQL = f"""
SELECT e.id AS event_id, j.key, j.value
FROM {DATASET} AS e, json_each(e.args) AS j WHERE e.args IS NOT NULL
"""
_EVENT_SQL = f"SELECT {', '.join(list(_EVENT_COLUMNS)[:-1])}, args::JSON AS args FROM {DATASET}"

VIEWS: tuple[View, ...] = (
    View("events", "Every event of the trace, one row each.", _EVENT_SQL, _EVENT_COLUMNS),
    View("kernels", "Kernel events with their launch geometry.", _KERNEL_SQL, _KERNEL_COLUMNS),
    View("flows", "Runtime call -> the GPU work it launched.", _FLOW_SQL, _FLOW_COLUMNS),
    View(
        "counters", "Allocator values over time, one row per value.", _COUNTER_SQL, _COUNTER_COLUMNS
    ),
    View(
        "copies", "Memcpy and memset events with bytes and memory kinds.", _COPY_SQL, _COPY_COLUMNS
    ),
    View("args", "Every event attribute, one row per (event, key).", _ARG_SQL, _ARG_COLUMNS),
)

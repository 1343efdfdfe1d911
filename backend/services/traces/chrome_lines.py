"""The DuckDB queries that write a trace's events and flows as Chrome trace JSON.

Every output row is one finished JSON object as text, built inside the query and led by
the comma that separates it from the one before (the export drops the file's first), so
a batch's text is its rows back to back, as Arrow already holds them; an export of a
million events makes no Python object per event (the events are read straight
from the dataset; Python only joins each batch's strings). Numbers follow Kineto's writer
(`libkineto/src/output_json.cpp`): times are µs with exactly three decimals from integer
ns, so every ns survives and a flow's `ts` is the same text as its event's.

Flows copy Kineto's `ac2g` links: a GPU event (kernel, memcpy, memset) with a correlation
id gets an `f` on its own track (pid = device, tid = stream) and the runtime call that
launched it an `s` on the call's thread. The call is the one the timeline's event detail
shows: the latest runtime call of the same rank and correlation at or before the GPU
event (and, where the GPU event knows its process, as nsys's do, of that process). As in
Kineto, one call launching several GPU events (a CUDA graph) has one `s` and an `f` per
event, all with one id. Correlation ids are unique per process only, and Perfetto matches
flows by id across the whole file, so each (rank, process) of calls is a scope: the first
scope's ids are the correlation ids (a single-rank trace's flows read like Kineto's), and
scope k's (from 0, by rank then pid) are `k * 10**digits + correlation`, `digits` the
width of the largest correlation id.

The source's own flows (Kineto's forward → backward `fwdbwd`) come back from the dataset's
`flows.parquet` as Kineto wrote them (`SOURCE_FLOWS_SQL`); a dataset without the file
(no source flows, or written before parser version 3) exports without them.

Public surface: `EVENTS_SQL`, `FLOWS_SQL`, `SOURCE_FLOWS_SQL`, `GPU_STREAMS_SQL`.
"""

CATEGORIES = {
    "kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
    "runtime": "cuda_runtime", "cpu_op": "cpu_op", "annotation": "user_annotation",
    "gpu_annotation": "gpu_user_annotation", "memory": "cpu_instant_event",
    "sync": "cuda_sync", "python": "python_function",
}  # fmt: skip
GPU_KINDS = ("kernel", "memcpy", "memset", "gpu_annotation", "sync")
FLOW_KINDS = ("kernel", "memcpy", "memset")  # the GPU work Kineto links to its launch


def _in(kinds: tuple[str, ...]) -> str:
    """`kind` is one of `kinds`, as SQL (not `IN (...)`: DuckDB plans a long IN list as a
    join, whose parallel probe would shuffle the events' order)."""
    return "(" + " OR ".join(f"kind = '{k}'" for k in kinds) + ")"


_DECIMAL_18 = 10**18  # DECIMAL(18, 0) holds up to 18 digits


def _us(ns: str) -> str:
    """SQL text of the integer ns expression `ns` as µs with three decimals (`-1.500`).

    An exact DECIMAL(18,3) product (never a double) does it 2-3x faster than building the
    text from `// 1000` and `% 1000`; that slower form stays for values past 18 digits
    (a hostile duration), where the 128-bit DECIMAL would be slower still."""
    a = f"abs({ns})"
    text = (
        f"(CASE WHEN {ns} < 0 THEN '-' ELSE '' END || ({a} // 1000)::VARCHAR || '.' "
        f"|| lpad(({a} % 1000)::VARCHAR, 3, '0'))"
    )
    return (
        f"(CASE WHEN {a} < {_DECIMAL_18} "
        f"THEN (({ns})::DECIMAL(18, 0) * 0.001::DECIMAL(4, 3))::VARCHAR ELSE {text} END)"
    )


_CATEGORY = (
    "CASE kind "
    + " ".join(f"WHEN '{kind}' THEN '\"{cat}\"'" for kind, cat in CATEGORIES.items())
    + " ELSE to_json(kind)::VARCHAR END"
)
# Fields the export adds to an event's stored args (as Kineto has them).
_EXTRA = (
    "concat_ws(',', '\"correlation\":' || correlation, CASE WHEN gpu THEN '\"device\":' "
    "|| coalesce(device::VARCHAR, 'null') || ',\"stream\":' || coalesce(stream::VARCHAR, "
    "'null') END)"
)
_EVENTS = f"""
SELECT ',{{"ph":"' || (CASE WHEN kind = 'memory' THEN 'i' ELSE 'X' END) || '","cat":'
    || ({_CATEGORY}) || ',"name":' || to_json(name)::VARCHAR
    || ',"pid":' || coalesce(CASE WHEN gpu THEN device ELSE pid END, 0)
    || ',"tid":' || coalesce(CASE WHEN gpu THEN stream ELSE tid END, 0)
    || ',"ts":' || {_us("start_ns - $1")}
    || (CASE WHEN kind = 'memory' THEN ',"s":"t"' ELSE ',"dur":' || {_us("dur_ns")} END)
    || ',"args":' || (CASE WHEN extra = '' THEN coalesce(args, '{{}}')
        WHEN args IS NULL OR args = '{{}}' THEN '{{' || extra || '}}'
        ELSE left(args, -1) || ',' || extra || '}}' END) || '}}' AS line
FROM (SELECT *, {_EXTRA} AS extra FROM (SELECT *, {_in(GPU_KINDS)} AS gpu
    FROM {{events}}))
"""
_FLOWS = f"""
WITH gpu AS (
    SELECT id, rank, pid, device, stream, correlation, start_ns FROM {{events}}
    WHERE {_in(FLOW_KINDS)} AND correlation >= 0
), calls AS (
    SELECT id, rank, pid, tid, correlation, start_ns FROM {{events}}
    WHERE kind = 'runtime' AND correlation >= 0
), pairs AS (
    SELECT g.device, g.stream, g.start_ns, g.correlation, c.rank, c.pid, c.tid,
        c.id AS call, c.start_ns AS call_start
    FROM gpu g JOIN calls c ON c.correlation = g.correlation
        AND c.rank IS NOT DISTINCT FROM g.rank AND c.start_ns <= g.start_ns
        AND (g.pid IS NULL OR c.pid = g.pid)
    QUALIFY row_number() OVER (PARTITION BY g.id ORDER BY c.start_ns DESC, c.id DESC) = 1
), flows AS (
    SELECT *, correlation + (dense_rank() OVER (ORDER BY rank NULLS FIRST, pid NULLS FIRST)
        - 1) * pow(10, length((max(correlation) OVER ())::VARCHAR))::BIGINT AS flow
    FROM pairs
)"""
# Every stored event, in the file's order (one parameter: the base time in ns).
EVENTS_SQL = _EVENTS
# The flows (the same parameter), each id's `s` before its `f`s, in id order.
FLOWS_SQL = f"""{_FLOWS}
SELECT line FROM (
    SELECT flow, 's' AS ph, ',{{"ph":"s","id":' || flow || ',"pid":' || coalesce(pid, 0)
        || ',"tid":' || coalesce(tid, 0) || ',"ts":' || {_us("call_start - $1")}
        || ',"cat":"ac2g","name":"ac2g"}}' AS line
    FROM (SELECT DISTINCT call, flow, pid, tid, call_start FROM flows)
    UNION ALL
    SELECT flow, 'f', ',{{"ph":"f","id":' || flow || ',"pid":' || coalesce(device, 0)
        || ',"tid":' || coalesce(stream, 0) || ',"ts":' || {_us("start_ns - $1")}
        || ',"cat":"ac2g","name":"ac2g","bp":"e"}}'
    FROM flows
) ORDER BY flow, ph DESC, line
"""
# The source's own flow events (`flows.parquet`: Kineto's `fwdbwd`; same parameter), as
# Kineto wrote them, in the file's order. Ids are unique per rank file only, so in a
# trace of several ranks rank k's (from 0, by rank) are `k * 10**digits + id`, as the
# `ac2g` scopes are (in 128-bit integers: a source id may be near 2**63); Perfetto keys a
# v1 flow by (cat, name, id), so these never join an `ac2g` flow of the same number.
SOURCE_FLOWS_SQL = f"""
SELECT ',{{"ph":"' || phase || '","id":' || flow || ',"pid":' || coalesce(pid, 0)
    || ',"tid":' || coalesce(tid, 0) || ',"ts":' || {_us("ts_ns - $1")}
    || ',"cat":' || to_json(cat)::VARCHAR || ',"name":' || to_json(name)::VARCHAR
    || (CASE WHEN enclosing THEN ',"bp":"e"' ELSE '' END) || '}}' AS line
FROM (
    SELECT *, CASE WHEN min(rank) OVER () IS NOT DISTINCT FROM max(rank) OVER ()
            AND count(rank) OVER () IN (0, count(*) OVER ())  -- one rank (or none)
        THEN flow_id::VARCHAR
        ELSE (flow_id::HUGEINT + (dense_rank() OVER (ORDER BY rank NULLS FIRST) - 1)
            * pow(10, length((max(flow_id) OVER ())::VARCHAR))::HUGEINT)::VARCHAR END AS flow
    FROM {{flows}}
)
"""
# The GPU tracks (device, stream) the export names with metadata events.
GPU_STREAMS_SQL = f"""
SELECT DISTINCT device, stream FROM {{events}}
WHERE {_in(GPU_KINDS)} AND device IS NOT NULL AND stream IS NOT NULL
"""

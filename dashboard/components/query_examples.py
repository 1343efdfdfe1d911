"""Example queries of the Query tab; each runs on a trace of any format.

`tests/query/test_examples.py` runs every one on real traces.
"""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "Top kernels": """SELECT name, count(*) AS count, sum(dur_ns) AS total_ns,
  avg(dur_ns) AS mean_ns, max(dur_ns) AS max_ns
FROM kernels
GROUP BY name
ORDER BY total_ns DESC
LIMIT 10""",
    "Launch delay percentiles": """-- runtime call start -> GPU work start, per launching call
SELECT launch_name, count(*) AS launches,
  quantile_cont(launch_delay_ns, 0.5) AS p50_ns,
  quantile_cont(launch_delay_ns, 0.9) AS p90_ns,
  quantile_cont(launch_delay_ns, 0.99) AS p99_ns
FROM flows
GROUP BY launch_name
ORDER BY launches DESC""",
    "Kernels overlapping NCCL": """-- kernels running while a NCCL kernel ran on the same GPU
SELECT k.name, count(*) AS kernels, sum(k.dur_ns) AS total_ns
FROM kernels AS k
WHERE k.name NOT ILIKE '%nccl%' AND EXISTS (
  SELECT 1 FROM kernels AS n
  WHERE n.name ILIKE '%nccl%' AND n.device = k.device
    AND n.rank IS NOT DISTINCT FROM k.rank
    AND n.start_ns < k.start_ns + k.dur_ns AND k.start_ns < n.start_ns + n.dur_ns)
GROUP BY k.name
ORDER BY total_ns DESC
LIMIT 20""",
    "Pageable copies": """-- copies to or from pageable host memory (add: AND bytes > 1 << 20)
SELECT id, name, copy_kind, bytes, dur_ns, start_ns
FROM copies
WHERE 'Pageable' IN (src_kind, dst_kind)
ORDER BY bytes DESC""",
    "Ops by self time": """-- CPU op time minus the time of the ops it directly encloses
WITH ops AS (
  SELECT id, name, coalesce(rank, -1) AS r, pid, tid, start_ns AS s,
    start_ns + dur_ns AS e, dur_ns
  FROM events WHERE kind = 'cpu_op'),
edges AS (
  SELECT id, r, pid, tid, s AS t, 1 AS step, e FROM ops
  UNION ALL SELECT id, r, pid, tid, e, -1, e FROM ops),
depth AS (  -- ops open when each one starts (ends first at a tie, outer op first)
  SELECT id, sum(step) OVER (PARTITION BY r, pid, tid ORDER BY t, step, e DESC, id
    ROWS UNBOUNDED PRECEDING) - 1 AS depth
  FROM edges QUALIFY step = 1),
nested AS (SELECT * FROM ops JOIN depth USING (id)),
parents AS (  -- the latest op one level up that started before it
  SELECT c.id, c.dur_ns, p.id AS parent FROM nested AS c ASOF JOIN nested AS p
    ON p.r = c.r AND p.pid = c.pid AND p.tid = c.tid AND p.depth = c.depth - 1
   AND p.s <= c.s),
children AS (SELECT parent AS id, sum(dur_ns) AS child_ns FROM parents GROUP BY parent)
SELECT name, count(*) AS calls, sum(dur_ns - coalesce(child_ns, 0)) AS self_ns,
  sum(dur_ns) AS total_ns
FROM nested LEFT JOIN children USING (id)
GROUP BY name
ORDER BY self_ns DESC
LIMIT 20""",
}

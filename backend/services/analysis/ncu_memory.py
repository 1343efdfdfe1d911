"""A kernel's memory hierarchy from Nsight Compute: hit rates, bytes per level, the bound.

Read from what the ncu parser stores on each kernel event (issue #26, item 4):

- Hit rates: L1/TEX ``l1tex__t_sector_hit_rate.pct`` and L2 ``lts__t_sector_hit_rate.pct``,
  the "L1/TEX Hit Rate" and "L2 Hit Rate" of ncu's Memory Workload Analysis section (a
  details page shows them under those labels, a raw page under the metric names).
- Bytes: the ``dram_bytes``, ``l2_bytes`` and ``l1_bytes`` args of the ncu parser
  (`ingest.parsers._ncu_metrics.launch_args`): the traffic that Nsight's hierarchical
  roofline charts (``SpeedOfLight_Hierarchical*RooflineChart``) plot, i.e. DRAM
  ``dram__bytes.sum``, L2 to L1 ``lts__lts2xbar`` bytes and L1 ``lsu_writeback`` bytes.
- The bound: each level's time is its bytes over its peak bandwidth, the peak being ncu's
  ``<bytes metric>.peak_sustained`` (bytes per cycle) times the level's clock
  (``<unit>__cycles_elapsed.avg.per_second``), the roof each level of the hierarchical
  roofline draws. The level with the longest time bounds the kernel's memory traffic (the
  roof it sits closest to); its share of the kernel's duration is that level's % of peak.
  Details pages carry no peaks and no L2/L1 bytes, so they have no bound.

Anything a file lacks is None, never 0 (a `--set basic` file has no hit rates).

Public surface: `memory_hierarchy`, `Levels`.
"""

from typing import Any

from backend.models.ncu_sections import NcuHierarchy, NcuLevelTime

L1_HIT = "l1tex__t_sector_hit_rate.pct"
L2_HIT = "lts__t_sector_hit_rate.pct"
# (level, bytes arg, [(peak bytes per cycle metric, clock metric)], first found wins)
LEVELS = (
    ("DRAM", "dram_bytes", [("dram__bytes.sum.peak_sustained",
                             "dram__cycles_elapsed.avg.per_second")]),
    ("L2", "l2_bytes", [("derived__lts__lts2xbar_bytes.sum.peak_sustained",
                         "lts__cycles_elapsed.avg.per_second")]),
    ("L1", "l1_bytes", [("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
                         "l1tex__cycles_elapsed.avg.per_second"),
                        ("derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained",
                         "l1tex__cycles_elapsed.avg.per_second")]),
)  # fmt: skip
Levels = list[NcuLevelTime]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _level(
    level: str,
    nbytes: float | None,
    peaks: list[tuple[str, str]],
    m: dict[str, float],
    dur_ns: float,
) -> NcuLevelTime:
    peak_metric = next(((p, c) for p, c in peaks if p in m and m.get(c)), None)
    peak = m[peak_metric[0]] * m[peak_metric[1]] if peak_metric else None
    time_ns = nbytes / peak * 1e9 if nbytes is not None and peak else None
    return NcuLevelTime(
        level=level, bytes=nbytes, peak_bytes_per_s=peak, time_ns=time_ns,
        pct_of_duration=100.0 * time_ns / dur_ns if time_ns is not None and dur_ns else None,
        peak_metrics=list(peak_metric) if peak_metric else [],
    )  # fmt: skip


def memory_hierarchy(args: dict[str, Any], dur_ns: float) -> NcuHierarchy | None:
    """Hit rates, bytes, time at peak per level and the bounding level of one launch.

    Args:
        args: the kernel event's args (``ncu_metrics`` and the byte args).
        dur_ns: the launch's duration.

    Returns:
        None when the launch has neither hit rates nor bytes.
    """
    m = {k: float(v) for k, v in (args.get("ncu_metrics") or {}).items() if _num(v) is not None}
    every = [_level(name, _num(args.get(key)), peaks, m, dur_ns) for name, key, peaks in LEVELS]
    levels = [lv for lv in every if lv.bytes is not None or lv.peak_bytes_per_s is not None]
    l1_hit, l2_hit = m.get(L1_HIT), m.get(L2_HIT)
    if l1_hit is None and l2_hit is None and all(lv.bytes is None for lv in levels):
        return None
    timed = [lv for lv in levels if lv.time_ns is not None]
    bound = max(timed, key=lambda lv: lv.time_ns or 0.0).level if len(timed) > 1 else None
    return NcuHierarchy(l1_hit_pct=l1_hit, l2_hit_pct=l2_hit, levels=levels, bound_level=bound)

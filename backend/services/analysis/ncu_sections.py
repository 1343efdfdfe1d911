"""Nsight Compute sections per kernel launch, from the args the ncu parser keeps.

The parser stores, on each kernel event of an ncu upload, ``ncu_metrics`` (raw metric
names, base units) and, for details/summary pages, ``ncu_sections`` (rows grouped by
section as ncu prints them, with rule results). This module turns those into the blocks
of ncu's details page. Every number names its metric:

- Speed of Light, % of peak: ``sm__throughput.avg.pct_of_peak_sustained_elapsed`` (compute),
  ``gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed`` (memory),
  ``gpu__dram_throughput...``, ``l1tex__throughput.avg.pct_of_peak_sustained_active``,
  ``lts__throughput.avg.pct_of_peak_sustained_elapsed``.
- Occupancy: theoretical ``sm__maximum_warps_per_active_cycle_pct``, achieved
  ``sm__warps_active.avg.pct_of_peak_sustained_active`` (and their warps per SM); block
  limits ``launch__occupancy_limit_{registers,shared_mem,warps,blocks,barriers}``. The
  limiters are the limits equal to the smallest, as ncu's Occupancy section reads them.
- Memory bytes: DRAM ``dram__bytes_read.sum``/``dram__bytes_write.sum``/``dram__bytes.sum``;
  L2 32-byte sectors ``lts__t_sectors_op_read.sum``/``_op_write.sum`` and ``lts__t_bytes.sum``;
  the L1/TEX -> L2 link of ncu's memory chart ``lts__t_sectors_srcunit_tex_op_{read,write}.sum``;
  L1 global loads/stores ``l1tex__t_{bytes,sectors}_pipe_lsu_mem_global_op_{ld,st}.sum``
  and ``l1tex__t_bytes.sum``. A level is listed when any of its metrics is there.
- Memory hierarchy: hit rates, bytes per level and the bounding level (`ncu_memory`).
- Warp stalls, the first family present: ``smsp__average_warps_issue_stalled_<r>_
  per_issue_active.ratio`` (the Warp State chart), ``smsp__average_warp_latency_issue_
  stalled_<r>.ratio``, ``smsp__warp_issue_stalled_<r>_per_warp_active.pct``,
  ``smsp__pcsamp_warps_issue_stalled_<r>`` (samples); ``_not_issued`` variants are left out.

Public surface: `compute_ncu_sections`.
"""

import re
from typing import Any

import orjson
from sqlmodel import Session

from backend.models.ncu_sections import (
    NcuKernel,
    NcuMemoryLevel,
    NcuOccupancy,
    NcuRule,
    NcuSection,
    NcuSectionMetric,
    NcuSectionsPublic,
    NcuValue,
)
from backend.services.analysis.ncu_memory import memory_hierarchy
from backend.services.analysis.stored import json_int, read_events
from backend.services.errors import InvalidInputError, NotFoundError
from backend.services.traces import get_trace

NCU_FORMAT = "ncu_csv"
SOL = (
    ("Compute (SM) Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Memory Throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("DRAM Throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("L1/TEX Cache Throughput", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("L2 Cache Throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
)
BLOCK_LIMITS = (
    ("Registers", "launch__occupancy_limit_registers"),
    ("Shared Mem", "launch__occupancy_limit_shared_mem"),
    ("Warps", "launch__occupancy_limit_warps"),
    ("SM (blocks)", "launch__occupancy_limit_blocks"),
    ("Barriers", "launch__occupancy_limit_barriers"),
)
SECTOR_BYTES = 32
# (level, [(read metric, factor)], [(write metric, factor)], total metric)
MEMORY = (
    ("DRAM", [("dram__bytes_read.sum", 1)], [("dram__bytes_write.sum", 1)], "dram__bytes.sum"),
    ("L2", [("lts__t_sectors_op_read.sum", SECTOR_BYTES)],
     [("lts__t_sectors_op_write.sum", SECTOR_BYTES)], "lts__t_bytes.sum"),
    ("L1/TEX → L2", [("lts__t_sectors_srcunit_tex_op_read.sum", SECTOR_BYTES)],
     [("lts__t_sectors_srcunit_tex_op_write.sum", SECTOR_BYTES)], ""),
    ("L1/TEX (global)",
     [("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", 1),
      ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", SECTOR_BYTES)],
     [("l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum", 1),
      ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", SECTOR_BYTES)],
     "l1tex__t_bytes.sum"),
)  # fmt: skip
STALLS = (
    (re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$"),
     "cycles per issued instruction"),
    (re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+)\.ratio$"), "cycles"),
    (re.compile(r"^smsp__warp_issue_stalled_(\w+)_per_warp_active\.pct$"),
     "% of active warp cycles"),
    (re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$"), "samples"),
)  # fmt: skip
OCCUPANCY = (
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_avg_per_active_cycle",
    "sm__warps_active.avg.per_cycle_active",
    "launch__waves_per_multiprocessor",
)
_HAS_NCU = "(json_exists(args, '$.ncu_metrics') OR json_exists(args, '$.ncu_sections'))"


def _values(m: dict[str, float], pairs: tuple[tuple[str, str], ...]) -> list[NcuValue]:
    return [NcuValue(label=lbl, value=m[k], metric=k) for lbl, k in pairs if k in m]


def _occupancy(m: dict[str, float]) -> NcuOccupancy | None:
    limits = _values(m, BLOCK_LIMITS)
    keys = OCCUPANCY
    if not limits and not any(k in m for k in keys):
        return None
    low = min((v.value for v in limits), default=None)
    return NcuOccupancy(
        theoretical_pct=m.get(keys[0]), achieved_pct=m.get(keys[1]),
        theoretical_warps_per_sm=m.get(keys[2]), achieved_warps_per_sm=m.get(keys[3]),
        waves_per_sm=m.get(keys[4]), block_limits=limits,
        limiters=[v.label for v in limits if v.value == low],
    )  # fmt: skip


def _first(m: dict[str, float], options: list[tuple[str, int]]) -> tuple[float, str] | None:
    return next(((m[k] * f, k) for k, f in options if k in m), None)


def _memory(m: dict[str, float]) -> list[NcuMemoryLevel]:
    out = []
    for level, reads, writes, total_key in MEMORY:
        read, write = _first(m, reads), _first(m, writes)
        total = m.get(total_key)
        used = [x[1] for x in (read, write) if x] + ([total_key] if total is not None else [])
        if not used:
            continue
        if total is None and read and write:
            total = read[0] + write[0]
        out.append(NcuMemoryLevel(level=level, read_bytes=read[0] if read else None,
                                  write_bytes=write[0] if write else None, total_bytes=total,
                                  metrics=used))  # fmt: skip
    return out


def _stalls(m: dict[str, float]) -> tuple[list[NcuValue], str | None]:
    for pattern, unit in STALLS:
        found = [
            NcuValue(label=match[1], value=v, metric=k)
            for k, v in m.items()
            if (match := pattern.match(k)) and not match[1].endswith("_not_issued")
        ]
        if found:
            return sorted(found, key=lambda s: -s.value), unit
    return [], None


def _sections(raw: list[dict[str, Any]]) -> list[NcuSection]:
    out = []
    for s in raw:
        metrics = [
            NcuSectionMetric(
                name=str(n),
                unit=str(u),
                value=v if _is_num(v) else None,
                text=None if _is_num(v) else str(v),
            )
            for n, u, v in s.get("metrics", [])
        ]
        rules = [_rule(s["name"], r) for r in s.get("rules", [])]
        out.append(NcuSection(name=s["name"], metrics=metrics, rules=rules))
    return out


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _rule(section: str, r: dict[str, Any]) -> NcuRule:
    speedup = r.get("speedup")
    pct = float(speedup) if isinstance(speedup, int | float) else None
    return NcuRule(section=section, name=str(r.get("name", "")), type=str(r.get("type", "")),
                   description=str(r.get("description", "")),
                   speedup_type=r.get("speedup_type") or None,
                   speedup_pct=pct)  # fmt: skip


def _kernel(name: str, dur: int, device: int | None, args: dict[str, Any]) -> NcuKernel:
    m = {k: float(v) for k, v in (args.get("ncu_metrics") or {}).items() if _is_num(v)}
    sections = _sections(args.get("ncu_sections") or [])
    stalls, unit = _stalls(m)
    inv = args.get("invocations")
    return NcuKernel(
        ncu_id=args.get("ncu id"), name=name, device=device, duration_ns=dur,
        invocations=inv if isinstance(inv, int) else None,
        grid=args.get("grid"), block=args.get("block"), speed_of_light=_values(m, SOL),
        occupancy=_occupancy(m), memory=_memory(m),
        hierarchy=memory_hierarchy(args, float(dur)), stalls=stalls, stall_unit=unit,
        rules=[r for s in sections for r in s.rules], sections=sections,
    )  # fmt: skip


def _note(page: str | None, total: int) -> str:
    if total == 0:
        return (
            "No section data on this trace's kernels: it was ingested before perfdash kept "
            "Nsight Compute sections, or is not ready yet; re-ingest it to see them."
        )
    if page == "raw":
        return (
            "Raw page (--page raw): numbers derived from the raw metrics; ncu's rule "
            "results and section grouping are only on the details page (--page details)."
        )
    if page == "summary":
        return "Summary page: each kernel's numbers are averages over its invocations."
    return "Details page: sections and rule results as ncu prints them."


def compute_ncu_sections(
    *, session: Session, trace_id: str, limit: int = 200, ncu_id: int | None = None
) -> NcuSectionsPublic:
    """The Nsight Compute sections of each kernel launch of an ncu upload, in file order.

    Args:
        session: database session.
        trace_id: the trace.
        limit: most launches answered (`total` counts them all).
        ncu_id: only the launch with this ncu ``ID``.

    Raises:
        NotFoundError: no such trace, or no launch with `ncu_id`.
        InvalidInputError: the trace is not an Nsight Compute upload.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    if trace.format != NCU_FORMAT:
        raise InvalidInputError(
            f"trace {trace_id} is a {trace.format or 'unknown'} trace; Nsight Compute sections "
            "come from ncu CSV uploads (ncu --csv --page details or --page raw)"
        )
    where, params = f"kind = 'kernel' AND {_HAS_NCU}", []
    if ncu_id is not None:
        where, params = f"{where} AND {json_int('ncu id')} = ?", [ncu_id]
    counted = read_events(trace, f"SELECT count(*) FROM {{events}} WHERE {where}", params)
    total = int(counted[0][0]) if counted else 0
    if ncu_id is not None and total == 0:
        raise NotFoundError(f"trace {trace_id} has no kernel launch with ncu ID {ncu_id}")
    sql = f"SELECT name, dur_ns, device, args FROM {{events}} WHERE {where} ORDER BY id LIMIT ?"
    rows = read_events(trace, sql, [*params, limit])
    kernels = [_kernel(n, int(d), dev, orjson.loads(a)) for n, d, dev, a in rows]
    page = (trace.trace_metadata or {}).get("ncu_page")
    return NcuSectionsPublic(trace_id=trace_id, page=page, note=_note(page, total), total=total,
                             kernels=kernels)  # fmt: skip

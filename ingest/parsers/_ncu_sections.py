"""Nsight Compute section data kept on each kernel event, for the sections view (issue #21).

Two args, both absent when the CSV has nothing for them:

- ``ncu_sections``: the details (or summary) page's rows as ncu groups them, in file order:
  ``[{"name": section, "metrics": [[label, unit, value]], "rules": [{"name", "type",
  "description", "speedup_type", "speedup"}]}]``. ``value`` is the number as printed in
  ``unit`` (ncu scales units per row), or the text when it is no number; ``speedup`` is
  ncu's "Estimated Speedup" in %, or None.
- ``ncu_metrics``: ``{metric name: value in base units}`` for the raw metrics the view reads
  (`KEEP`), on any page; details/summary labels that show one of them are mapped to its name
  (``LABELS`` in `_ncu_csv`).

Public surface: `SectionCollector`, `kept_metrics`, `KEEP`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingest.parsers._ncu_metrics import number

# The raw metrics behind Speed of Light, Occupancy, the memory chart, the warp stalls and the
# memory hierarchy (`backend.services.analysis.ncu_memory`).
KEEP = re.compile(
    r"^(sm__throughput\.avg\.pct_of_peak_sustained_elapsed"
    r"|gpu__compute_memory_throughput\.avg\.pct_of_peak_sustained_elapsed"
    r"|gpu__dram_throughput\.avg\.pct_of_peak_sustained_elapsed"
    r"|l1tex__throughput\.avg\.pct_of_peak_sustained_active"
    r"|lts__throughput\.avg\.pct_of_peak_sustained_elapsed"
    r"|sm__maximum_warps_per_active_cycle_pct|sm__maximum_warps_avg_per_active_cycle"
    r"|sm__warps_active\.avg\.(pct_of_peak_sustained_active|per_cycle_active)"
    r"|launch__occupancy_limit_[a-z_]+|launch__waves_per_multiprocessor"
    r"|(dram__bytes(_read|_write)?|lts__t_bytes|l1tex__t_bytes)\.sum"
    r"|lts__t_sectors(_srcunit_tex)?_op_(read|write|atom|red)\.sum"
    r"|l1tex__t_(bytes|sectors)_pipe_lsu_mem_global_op_(ld|st)\.sum"
    r"|smsp__average_warp_latency_per_inst_issued\.ratio"
    r"|smsp__average_warp_latency_issue_stalled_[a-z_]+\.ratio"
    r"|smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio"
    r"|smsp__warp_issue_stalled_[a-z_]+_per_warp_active\.pct"
    r"|smsp__pcsamp_warps_issue_stalled_[a-z_]+"
    # the memory hierarchy (issue #26): hit rates, and each level's peak bytes per cycle and
    # clock, the denominators of Nsight's hierarchical roofline
    r"|(lts|l1tex)__t_sector_hit_rate\.pct"
    r"|(dram|lts|l1tex)__cycles_elapsed\.avg\.per_second"
    r"|dram__bytes\.sum\.peak_sustained"
    r"|derived__lts__lts2xbar_bytes\.sum\.peak_sustained"
    r"|derived__l1tex__lsu_writeback_bytes_mem_lgds?\.sum\.peak_sustained)$"
)
# Rule rows name their section by its identifier, metric rows by its title: a rule goes under
# the title ncu's details page shows it under (the `.section` files' Identifier/DisplayName).
SECTION_TITLES = {
    "SpeedOfLight": "GPU Speed Of Light Throughput",
    "SpeedOfLight_RooflineChart": "GPU Speed Of Light Throughput",
    "LaunchStats": "Launch Statistics",
    "Occupancy": "Occupancy",
    "MemoryWorkloadAnalysis": "Memory Workload Analysis",
    "MemoryWorkloadAnalysis_Chart": "Memory Workload Analysis",
    "MemoryWorkloadAnalysis_Tables": "Memory Workload Analysis",
    "ComputeWorkloadAnalysis": "Compute Workload Analysis",
    "SchedulerStats": "Scheduler Statistics",
    "WarpStateStats": "Warp State Statistics",
    "InstructionStats": "Instruction Statistics",
    "SourceCounters": "Source Counters",
    "WorkloadDistribution": "GPU and Memory Workload Distribution",
    "NumaAffinity": "NUMA Affinity",
    "PmSampling": "PM Sampling",
}
MAX_ROWS = 2000  # per launch: a `--set full` details page has a few hundred
MAX_TEXT = 2000  # characters of one rule description or value


def kept_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """The metrics the sections view reads (`KEEP`), from one launch's numbers.

    >>> kept_metrics({"dram__bytes_read.sum": 5.0, "dram__bytes.avg": 1.0})
    {'dram__bytes_read.sum': 5.0}
    """
    return {k: v for k, v in metrics.items() if KEEP.match(k)}


class SectionCollector:
    """Rows of one launch's long page, grouped by section in the order ncu wrote them."""

    def __init__(self) -> None:
        self.sections: list[dict[str, Any]] = []
        self.rows = 0
        self.dropped = 0

    def _section(self, name: str) -> dict[str, Any]:
        if not self.sections or self.sections[-1]["name"] != name:
            found = next((s for s in self.sections if s["name"] == name), None)
            if found is not None:
                return found
            self.sections.append({"name": name, "metrics": [], "rules": []})
        return self.sections[-1]

    def add(self, cells: Mapping[str, str | None], value_column: str) -> None:
        """One row: a metric (``Metric Name`` set) or a rule result (``Rule Name`` set)."""
        get = {k: (v or "").strip() for k, v in cells.items()}
        label, rule = get.get("Metric Name", ""), get.get("Rule Name", "")
        if not label and not rule:
            return
        if self.rows >= MAX_ROWS:
            self.dropped += 1
            return
        self.rows += 1
        name = get.get("Section Name", "") or "(no section)"
        section = self._section(SECTION_TITLES.get(name, name) if rule else name)
        if rule:
            section["rules"].append(
                {
                    "section_id": name,
                    "name": rule,
                    "type": get.get("Rule Type", ""),
                    "description": get.get("Rule Description", "")[:MAX_TEXT],
                    "speedup_type": get.get("Estimated Speedup Type", ""),
                    "speedup": number(get.get("Estimated Speedup", "")),
                }
            )
            return
        raw = get.get(value_column, "")
        value = number(raw)
        section["metrics"].append(
            [label, get.get("Metric Unit", ""), raw[:MAX_TEXT] if value is None else value]
        )

    def result(self) -> list[dict[str, Any]] | None:
        """The sections, or None when the launch had no section rows."""
        return self.sections or None

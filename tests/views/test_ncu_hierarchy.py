"""L1/TEX and L2 hit rates, bytes per level and the bounding level (issue #26, item 4).

Expected values are read here from the ncu CSVs with the csv module: the hit rates are ncu's
own ``lts__t_sector_hit_rate.pct``/``l1tex__t_sector_hit_rate.pct`` columns (raw page) or
"L2 Hit Rate"/"L1/TEX Hit Rate" rows (details page); each level's share of the duration is
checked against ncu's own "% of peak" metric for that level, which perfdash does not read.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.views.test_ncu_sections_api import NCU, csv_rows

# level -> (bytes per second, peak bytes per cycle, clock, ncu's own % of that peak)
LEVELS = {
    "DRAM": ("dram__bytes.sum.per_second", "dram__bytes.sum.peak_sustained",
             "dram__cycles_elapsed.avg.per_second",
             "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    "L2": ("derived__lts__lts2xbar_bytes.sum.per_second",
           "derived__lts__lts2xbar_bytes.sum.peak_sustained",
           "lts__cycles_elapsed.avg.per_second",
           "lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "L1": ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second",
           "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
           "l1tex__cycles_elapsed.avg.per_second",
           "l1tex__lsu_writeback_active_mem_lgds.sum.pct_of_peak_sustained_elapsed"),
}  # fmt: skip


def _kernels(client: TestClient, trace_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/traces/{trace_id}/ncu")
    assert response.status_code == 200, response.text
    return list(response.json()["kernels"])


def _raw() -> list[dict[str, float | str]]:
    rows = csv_rows(NCU / "h200_full_raw.csv")[1:]  # past the units row (LC_ALL=C: base units)
    return [{k: _float(v) for k, v in r.items()} for r in rows]


def _float(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def test_raw_page_hit_rates_bytes_and_bound(client: TestClient, ingest: Ingest) -> None:
    want = _raw()
    kernels = _kernels(client, ingest(NCU / "h200_full_raw.csv", "h200_full_raw.csv"))
    assert len(kernels) == len(want) == 3
    bounds = []
    for k, w in zip(kernels, want, strict=True):
        h = k["hierarchy"]
        assert h["l2_hit_pct"] == w["lts__t_sector_hit_rate.pct"]
        assert h["l1_hit_pct"] == w["l1tex__t_sector_hit_rate.pct"]
        dur_s = float(w["gpu__time_duration.sum"]) * 1e-9
        levels = {lv["level"]: lv for lv in h["levels"]}
        assert set(levels) == set(LEVELS)
        for level, (rate, peak, clock, ncu_pct) in LEVELS.items():
            lv = levels[level]
            assert lv["bytes"] == pytest.approx(float(w[rate]) * dur_s, rel=1e-6)
            assert lv["peak_bytes_per_s"] == pytest.approx(float(w[peak]) * float(w[clock]))
            # ncu rounds its % to 2 decimals, and times a level by its clock, not ns
            assert lv["pct_of_duration"] == pytest.approx(float(w[ncu_pct]), abs=0.15)
        expected = max(LEVELS, key=lambda lvl: float(w[LEVELS[lvl][3]]))
        assert h["bound_level"] == expected
        bounds.append(expected)
    assert bounds == ["L2", "DRAM", "DRAM"]  # the GEMM reuses through L2; the adds stream


def test_details_page_hit_rates_and_no_bound(client: TestClient, ingest: Ingest) -> None:
    path = NCU / "h200_full_details.csv"
    want: dict[int, dict[str, float]] = defaultdict(dict)
    for r in csv_rows(path):
        if r["Section Name"] in ("Memory Workload Analysis", "GPU Speed Of Light Throughput"):
            want[int(r["ID"])][r["Metric Name"]] = float(r["Metric Value"])
    kernels = _kernels(client, ingest(path, path.name))
    assert len(kernels) == len(want) == 3
    for k in kernels:
        w, h = want[k["ncu_id"]], k["hierarchy"]
        assert h["l2_hit_pct"] == w["L2 Hit Rate"]
        assert h["l1_hit_pct"] == w["L1/TEX Hit Rate"]
        # a details page has DRAM bytes/s and the duration, but no L2/L1 bytes and no peaks
        (dram,) = h["levels"]
        assert dram["level"] == "DRAM" and dram["peak_bytes_per_s"] is None
        assert dram["bytes"] == pytest.approx(w["Memory Throughput"] * w["Duration"] * 1e-9)
        assert h["bound_level"] is None


def test_file_without_hit_rates_leaves_them_out(client: TestClient, ingest: Ingest) -> None:
    path = NCU / "gemm_elementwise_raw.csv"  # SpeedOfLight + rooflines: no Memory Workload
    header = csv_rows(path)[0].keys()
    assert not any("hit_rate" in name for name in header)
    for k in _kernels(client, ingest(path, path.name)):
        h = k["hierarchy"]
        assert h["l1_hit_pct"] is None and h["l2_hit_pct"] is None
        assert h["bound_level"] in ("DRAM", "L2")  # bytes and peaks are there


def test_roofline_points_carry_the_hierarchy(client: TestClient, ingest: Ingest) -> None:
    want = _raw()
    trace_id = ingest(NCU / "h200_full_raw.csv", "h200_full_raw.csv")
    response = client.get(f"/api/v1/traces/{trace_id}/roofline")
    assert response.status_code == 200, response.text
    points = response.json()["points"]
    assert points
    for p in points:
        launches = [w for w in want if w["Kernel Name"] == p["name"]]
        weights = [float(w["gpu__time_duration.sum"]) for w in launches]
        hits = [float(w["lts__t_sector_hit_rate.pct"]) for w in launches]
        mean = sum(x * t for x, t in zip(hits, weights, strict=True)) / sum(weights)
        assert p["l2_hit_pct"] == pytest.approx(mean)
        assert p["memory_bound_level"] in ("DRAM", "L2")

"""`GET /traces/{id}/ncu` on SQLite and PostgreSQL, against the ncu CSVs themselves.

Expected numbers are read here with the csv module (ncu's ``==PROF==`` lines skipped), in
the units ncu printed, never through perfdash's parser.
"""

from __future__ import annotations

import contextlib
import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import CORPUS, DATA
from tests.factories import Ingest

NCU = DATA / "ncu"
CORPUS_NCU = CORPUS / "h200" / "ncu2025.3_roofline_raw.csv"
STALL = "smsp__average_warps_issue_stalled_"
SCALE = {"": 1.0, "%": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "block": 1.0}
SOL = {"Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
       "L1/TEX Cache Throughput", "L2 Cache Throughput"}  # fmt: skip
LIMITS = {"Block Limit Registers": "Registers", "Block Limit Shared Mem": "Shared Mem",
          "Block Limit Warps": "Warps", "Block Limit SM": "SM (blocks)",
          "Block Limit Barriers": "Barriers"}  # fmt: skip


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The CSV's rows as dicts, from its header on: ncu's ==PROF==/==WARNING== lines and the
    program's own output come first."""
    lines = path.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(('"ID",', '"Process ID",')))
    return list(csv.DictReader(lines[start:]))


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _details_by_launch(path: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"values": {}, "sol": {}, "rules": [], "order": []}
    )
    for r in csv_rows(path):
        launch = out[int(r["ID"])]
        if r.get("Rule Name"):
            speedup = r.get("Estimated Speedup") or ""
            launch["rules"].append(
                (r["Rule Name"], r["Rule Type"], _num(speedup) if speedup else None)
            )
            continue
        if r["Section Name"] not in launch["order"]:
            launch["order"].append(r["Section Name"])
        value: float | str = r["Metric Value"]
        with contextlib.suppress(ValueError):
            value = _num(r["Metric Value"]) * SCALE.get(r["Metric Unit"], 1.0)
        if r["Section Name"] == "GPU Speed Of Light Throughput":
            launch["sol"][r["Metric Name"]] = value
        launch["values"].setdefault(r["Metric Name"], value)
    return out


def _get(client: TestClient, trace_id: str, query: str = "") -> Any:
    response = client.get(f"/api/v1/traces/{trace_id}/ncu{query}")
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("name", ["gemm_elementwise_details.csv", "h200_full_details.csv"])
def test_details_page_sections(client: TestClient, ingest: Ingest, name: str) -> None:
    path = NCU / name
    want = _details_by_launch(path)
    body = _get(client, ingest(path, path.name))
    assert body["page"] == "details" and body["total"] == len(want)
    for k in body["kernels"]:
        w = want[k["ncu_id"]]
        v = w["values"]
        assert {s["label"]: s["value"] for s in k["speed_of_light"]} == pytest.approx(
            {label: w["sol"][label] for label in SOL}
        )
        occ = k["occupancy"]
        assert occ["theoretical_pct"] == pytest.approx(v["Theoretical Occupancy"])
        assert occ["achieved_pct"] == pytest.approx(v["Achieved Occupancy"])
        limits = {LIMITS[label]: v[label] for label in LIMITS}
        assert {b["label"]: b["value"] for b in occ["block_limits"]} == limits
        assert set(occ["limiters"]) == {n for n, x in limits.items() if x == min(limits.values())}
        if "dram__bytes_read.sum" in v:  # only with --metrics: details pages hold no chart
            dram = next(m for m in k["memory"] if m["level"] == "DRAM")
            assert dram["read_bytes"] == pytest.approx(v["dram__bytes_read.sum"])
            assert dram["write_bytes"] == pytest.approx(v["dram__bytes_write.sum"])
            assert dram["total_bytes"] == pytest.approx(v["dram__bytes.sum"])
        rules = [(r["name"], r["type"], r["speedup_pct"]) for r in k["rules"]]
        assert sorted(rules, key=str) == sorted(w["rules"], key=str)
        assert [s["name"] for s in k["sections"] if s["metrics"]] == w["order"]
        # every rule is filed under a section whose metrics the CSV has (rule rows name
        # it by identifier, e.g. WarpStateStats for "Warp State Statistics")
        assert all(s["name"] in w["order"] for s in k["sections"] if s["rules"])
    if name != "gemm_elementwise_details.csv":
        return
    gemm = body["kernels"][0]
    assert gemm["name"].startswith("nvjet") and gemm["occupancy"]["limiters"] == [
        "Registers",
        "Shared Mem",
    ]
    occupancy = next(s for s in gemm["sections"] if s["name"] == "Occupancy")
    assert occupancy["rules"][0]["speedup_pct"] == pytest.approx(81.25)


def _raw_launches(path: Path) -> list[dict[str, float]]:
    rows = csv_rows(path)
    units = rows[0]
    out = []
    for r in rows[1:]:
        values = {}
        for name, text in r.items():
            with contextlib.suppress(ValueError):  # text cells; units other than bytes are 1
                values[name] = _num(text) * SCALE.get(units[name], 1.0)
        out.append(values)
    return out


@pytest.mark.parametrize(
    "path", [NCU / "gemm_elementwise_raw.csv", NCU / "h200_full_raw.csv", CORPUS_NCU]
)
def test_raw_page_numbers_from_the_raw_metrics(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not here (PERFDASH_TEST_CORPUS)")
    want = _raw_launches(path)
    body = _get(client, ingest(path, path.name))
    assert body["page"] == "raw" and body["total"] == len(want)
    assert "only on the details page" in body["note"]
    for k, v in zip(body["kernels"], want, strict=True):
        sol = {s["metric"]: s["value"] for s in k["speed_of_light"]}
        assert sol["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(
            v["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
        )
        assert sol[
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
        ] == pytest.approx(v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"])
        occ = k["occupancy"]
        assert occ["theoretical_pct"] == pytest.approx(v["sm__maximum_warps_per_active_cycle_pct"])
        assert occ["achieved_pct"] == pytest.approx(
            v.get("sm__warps_active.avg.pct_of_peak_sustained_active")
        )  # None where the CSV lacks it (the corpus file)
        registers = next(b for b in occ["block_limits"] if b["label"] == "Registers")
        assert registers["value"] == v["launch__occupancy_limit_registers"]
        levels = {m["level"]: m for m in k["memory"]}
        if "dram__bytes_read.sum" in v:
            assert levels["DRAM"]["read_bytes"] == pytest.approx(v["dram__bytes_read.sum"])
        if "lts__t_bytes.sum" in v:
            assert levels["L2"]["total_bytes"] == pytest.approx(v["lts__t_bytes.sum"])
        assert k["rules"] == [] and k["sections"] == []
        stalls = {
            name.removeprefix(STALL).removesuffix("_per_issue_active.ratio"): x
            for name, x in v.items()
            if name.startswith(STALL) and name.endswith("_per_issue_active.ratio")
        }
        assert {s["label"]: s["value"] for s in k["stalls"]} == pytest.approx(stalls)
        assert [s["value"] for s in k["stalls"]] == sorted(stalls.values(), reverse=True)
        assert k["stall_unit"] == ("cycles per issued instruction" if stalls else None)
        if "lts__t_sectors_srcunit_tex_op_read.sum" in v:
            link = levels["L1/TEX → L2"]
            assert link["read_bytes"] == 32 * v["lts__t_sectors_srcunit_tex_op_read.sum"]
            assert link["write_bytes"] == 32 * v["lts__t_sectors_srcunit_tex_op_write.sum"]


def test_one_launch_and_the_limit(client: TestClient, ingest: Ingest) -> None:
    path = NCU / "gemm_elementwise_details.csv"
    trace_id = ingest(path, path.name)
    one = _get(client, trace_id, "?kernel=1")
    assert [k["ncu_id"] for k in one["kernels"]] == [1] and one["total"] == 1
    first = _get(client, trace_id, "?limit=1")
    assert len(first["kernels"]) == 1 and first["total"] == 4


def test_bad_requests_have_clear_reasons(
    client: TestClient, ingest: Ingest, h200_trace: Path
) -> None:
    path = NCU / "gemm_elementwise_details.csv"
    ncu_id = ingest(path, path.name)
    torch_id = ingest(h200_trace, h200_trace.name)
    r = client.get(f"/api/v1/traces/{torch_id}/ncu")
    assert r.status_code == 422 and "Nsight Compute sections come from ncu CSV" in r.text
    r = client.get("/api/v1/traces/nosuchtrace/ncu")
    assert r.status_code == 404
    r = client.get(f"/api/v1/traces/{ncu_id}/ncu?kernel=99")
    assert r.status_code == 404 and "no kernel launch with ncu ID 99" in r.text
    for query in ("limit=0", "limit=1001", "kernel=-1", "kernel=x"):
        assert client.get(f"/api/v1/traces/{ncu_id}/ncu?{query}").status_code == 422, query


def test_summary_page_averages_per_kernel(client: TestClient, ingest: Ingest) -> None:
    path = NCU / "gemm_elementwise_summary.csv"
    want: dict[str, dict[str, float]] = defaultdict(dict)
    invocations: dict[str, int] = {}
    for r in csv_rows(path):
        invocations[r["Kernel Name"]] = int(_num(r["Invocations"]))
        if r["Section Name"] in ("Occupancy", "GPU Speed Of Light Throughput"):
            want[r["Kernel Name"]][r["Metric Name"]] = _num(r["Average"])
    body = _get(client, ingest(path, path.name))
    assert body["page"] == "summary" and "averages over its invocations" in body["note"]
    assert {k["name"]: k["invocations"] for k in body["kernels"]} == invocations
    for k in body["kernels"]:
        w = want[k["name"]]
        assert k["occupancy"]["theoretical_pct"] == pytest.approx(w["Theoretical Occupancy"])
        sol = {s["label"]: s["value"] for s in k["speed_of_light"]}
        assert sol["Compute (SM) Throughput"] == pytest.approx(w["Compute (SM) Throughput"])
        assert k["rules"] == []  # the summary page carries no rule results


def test_launches_without_section_data_say_so(
    client: TestClient, ingest: Ingest, tmp_path: Path
) -> None:
    """A raw page with none of the section metrics (as a trace ingested before them reads)."""
    text = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Device","CC",'
        '"gpu__time_duration.sum"\n"","","","","","","","nsecond"\n'
        '"0","9","python3","h","k0","0","9.0","1000"\n'
    )
    path = tmp_path / "plain_raw.csv"
    path.write_text(text)
    body = _get(client, ingest(path, path.name))
    assert body["total"] == 0 and body["kernels"] == []
    assert "re-ingest" in body["note"]

"""`/steps/breakdown`, `/ranks` and `/collectives` against the raw files: the real 2-rank DDP
job (Kineto), a one-GPU H200 trace, and nsys exports read with plain sqlite3."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace
from tests.conftest import CORPUS
from tests.factories import upload
from tests.ranks.raw import (
    COMM,
    COMPUTE,
    ORDER,
    kineto_gpu_windows,
    kineto_steps,
    kineto_work,
    median_floor,
    nearest_rank,
    nsys_work,
    split,
    union,
)

DATA = Path(__file__).resolve().parents[1] / "data"
DDP = DATA / "ddp"
DDP_FILES = [DDP / f"ddp_rank{rank}.pt.trace.json.gz" for rank in (0, 1)]
H200 = DATA / "torch" / "h200_train_step.pt.trace.json.gz"
NCCL_NSYS = DATA / "nsys" / "nccl_2gpu.sqlite"
NVTX_STEPS = DATA / "nsys" / "nvtx_steps.sqlite"
PARTS = [f"{c}_ns" for c in ORDER] + ["idle_ns"]
DTYPE = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4}


def _get(client: TestClient, trace_id: str, path: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/{path}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def ddp(client: TestClient, engine: Engine, settings: Settings) -> str:
    trace_id = upload(client, [(p.name, p.read_bytes()) for p in DDP_FILES])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    return str(trace_id)


def test_ddp_ranks_match_the_raw_kernels(client: TestClient, ddp: str) -> None:
    body = _get(client, ddp, "ranks")
    expect = json.loads((DDP / "ddp_nccl_expect.json").read_text())
    assert body["world_size"] == 2
    rows = {r["rank"]: r for r in body["items"]}
    assert set(rows) == {0, 1}
    for rank, path in enumerate(DDP_FILES):
        work = kineto_work(path)
        lo, hi = min(w.start for w in work), max(w.end for w in work)
        row = rows[rank]
        assert (row["start_ns"], row["end_ns"]) == (lo, hi)
        assert {k: row[k] for k in PARTS} == split(work, lo, hi)
        comm = [(w.start, w.end) for w in work if w.category == COMM]
        compute = [(w.start, w.end) for w in work if w.category == COMPUTE]
        # NCCL kernels run on one stream: their union is the summed time the job recorded
        assert union(comm) == expect[f"rank{rank}"]["nccl_total_ns"]
        overlap = union(comm) + union(compute) - union(comm + compute)
        assert row["comm_compute_overlap_ns"] == overlap
        assert row["communication_ns"] + overlap == union(comm)


def _raw_instances() -> list[list[tuple[int, Any]]]:
    """Each collective instance (n-th NCCL kernel of one name per rank): (rank, work)."""
    per_rank = {r: sorted((w for w in kineto_work(p) if w.category == COMM), key=lambda w: w.start)
                for r, p in enumerate(DDP_FILES)}  # fmt: skip
    groups: dict[tuple[str, int], list[tuple[int, Any]]] = defaultdict(list)
    for rank, kernels in per_rank.items():
        seen: dict[str, int] = defaultdict(int)
        for w in kernels:
            groups[(w.name, seen[w.name])].append((rank, w))
            seen[w.name] += 1
    return list(groups.values())


def test_ddp_collectives_match_the_raw_args(client: TestClient, ddp: str) -> None:
    body = _get(client, ddp, "collectives")
    expect = json.loads((DDP / "ddp_nccl_expect.json").read_text())
    instances = _raw_instances()
    assert all(len(members) == 2 for members in instances)
    assert body["matched_instances"] == len(instances) and body["unmatched_kernels"] == 0
    raw: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0, 0])
    for members in instances:
        latest = max(w.start for _, w in members)
        for _, w in members:
            args = dict(w.args)
            size = max(args["In msg nelems"], args["Out msg nelems"]) * DTYPE[args["dtype"]]
            row = raw[(args["Collective name"], size)]
            row[0] += 1
            row[1] += w.end - w.start
            row[2] += latest - w.start
    got = {(r["collective"], r["msg_bytes"]): r for r in body["items"]}
    assert set(got) == set(raw)
    assert sum(r["count"] for r in body["items"]) == sum(v["nccl_kernels"] for v in expect.values())
    assert sum(r["total_ns"] for r in body["items"]) == sum(
        v["nccl_total_ns"] for v in expect.values()
    )
    for key, (count, total, wait) in raw.items():
        row = got[key]
        assert (row["count"], row["total_ns"], row["wait_ns"]) == (count, total, wait)
        assert (row["group_size"], row["ranks"], row["algorithm"], row["protocol"]) == (
            2, 2, "RING", "LL",
        )  # fmt: skip
        algbw = key[1] * count / total  # bytes per ns = GB/s
        assert row["algbw_gbps"] == pytest.approx(algbw, abs=1e-3)
        # nccl-tests PERFORMANCE.md: all_reduce busbw = algbw * 2(n-1)/n, n = 2 here
        assert row["busbw_gbps"] == pytest.approx(algbw * 2 * (2 - 1) / 2, abs=1e-3)
    ranks = {r["rank"]: r for r in _get(client, ddp, "ranks")["items"]}
    for rank in (0, 1):
        own = sum(max(w.start for _, w in m) - w.start for m in instances for r, w in m
                  if r == rank)  # fmt: skip
        assert ranks[rank]["collective_wait_ns"] == own


def _check_steps(body: dict[str, Any], windows: dict[Any, tuple[int, int]],
                 work: dict[int | None, list[Any]]) -> None:  # fmt: skip
    rows = {(r["step"], r["rank"]): r for r in body["items"]}
    assert set(rows) == set(windows)
    for key, (lo, hi) in windows.items():
        row = rows[key]
        assert (row["start_ns"], row["end_ns"], row["span_ns"]) == (lo, hi, hi - lo)
        assert {k: row[k] for k in PARTS} == split(work[key[1]], lo, hi)
    times: dict[int, int] = defaultdict(int)
    for (step, _), (lo, hi) in windows.items():
        times[step] = max(times[step], hi - lo)
    spread = body["spread"]
    values = list(times.values())
    assert spread["count"] == len(values)
    assert spread["p50_ns"] == median_floor(values)
    assert spread["p95_ns"] == nearest_rank(values, 95)
    assert (spread["min_ns"], spread["max_ns"]) == (min(values), max(values))
    slowest = max(times, key=lambda n: (times[n], -n))
    assert spread["slowest_step"] == slowest
    assert {r["step"] for r in body["items"] if r["slowest"]} == {slowest}


def test_ddp_steps_match_the_raw_profiler_steps(client: TestClient, ddp: str) -> None:
    body = _get(client, ddp, "steps/breakdown")
    assert (body["marker"], body["marker_source"]) == ("ProfilerStep#N", "ProfilerStep")
    windows = {(n, rank): (lo, hi) for rank, p in enumerate(DDP_FILES)
               for n, lo, hi in kineto_steps(p)}  # fmt: skip
    assert len(windows) == 8
    work: dict[int | None, list[Any]] = {r: kineto_work(p) for r, p in enumerate(DDP_FILES)}
    _check_steps(body, windows, work)
    assert {r["device"] for r in body["items"] if r["rank"] == 1} == {1}


def test_ddp_gpu_windows_follow_the_launched_work(client: TestClient, ddp: str) -> None:
    response = client.get(f"/api/v1/traces/{ddp}/steps/breakdown", params={"window": "gpu"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["window"] == "gpu"
    windows = {(n, rank): lo_hi for rank, p in enumerate(DDP_FILES)
               for n, lo_hi in kineto_gpu_windows(p).items()}  # fmt: skip
    assert len(windows) == 8
    work: dict[int | None, list[Any]] = {r: kineto_work(p) for r, p in enumerate(DDP_FILES)}
    _check_steps(body, windows, work)


def test_bad_window_is_422(client: TestClient, ddp: str) -> None:
    response = client.get(f"/api/v1/traces/{ddp}/steps/breakdown", params={"window": "wall"})
    assert response.status_code == 422
    assert "window" in response.text


def test_one_gpu_steps_match_the_raw_profiler_steps(client: TestClient, ingest: Any) -> None:
    trace_id = ingest(H200)
    body = _get(client, trace_id, "steps/breakdown")
    windows = {(n, None): (lo, hi) for n, lo, hi in kineto_steps(H200)}
    assert len(windows) >= 3
    _check_steps(body, windows, {None: kineto_work(H200)})
    assert _get(client, trace_id, "collectives")["items"] == []  # no NCCL kernel
    ranks = _get(client, trace_id, "ranks")
    (row,) = ranks["items"]
    assert (ranks["world_size"], ranks["stragglers"], row["rank"]) == (0, [], None)
    work = kineto_work(H200)
    lo, hi = min(w.start for w in work), max(w.end for w in work)
    assert {k: row[k] for k in PARTS} == split(work, lo, hi)


def test_nvtx_steps_match_the_sqlite(client: TestClient, ingest: Any) -> None:
    body = _get(client, ingest(NVTX_STEPS), "steps/breakdown")
    assert body["marker"] == "train_step_N"
    db = sqlite3.connect(NVTX_STEPS)
    rows = db.execute(
        "SELECT text, start, end FROM NVTX_EVENTS WHERE text LIKE 'train_step_%' ORDER BY start"
    ).fetchall()
    db.close()
    windows = {(int(t.rsplit("_", 1)[1]), None): (s, e) for t, s, e in rows}
    assert len(windows) == 5
    _check_steps(body, windows, {None: nsys_work(NVTX_STEPS)})


def test_nsys_two_processes_are_keyed_by_device(client: TestClient, ingest: Any) -> None:
    trace_id = ingest(NCCL_NSYS)
    work = nsys_work(NCCL_NSYS)
    nccl = [w for w in work if w.category == COMM]
    body = _get(client, trace_id, "collectives")
    (row,) = body["items"]
    assert (row["collective"], row["count"], row["ranks"]) == ("allreduce", len(nccl), 2)
    assert row["total_ns"] == sum(w.end - w.start for w in nccl)
    assert row["msg_bytes"] is None and row["busbw_gbps"] is None  # nsys has no sizes
    per_device: dict[int, list[Any]] = defaultdict(list)
    for w in sorted(nccl, key=lambda w: w.start):
        per_device[w.device].append(w)
    assert len({len(v) for v in per_device.values()}) == 1
    wait = {d: 0 for d in per_device}
    for members in zip(*per_device.values(), strict=True):
        latest = max(w.start for w in members)
        for w in members:
            wait[w.device] += latest - w.start
    assert row["wait_ns"] == sum(wait.values())
    ranks = _get(client, trace_id, "ranks")
    assert ranks["world_size"] == 2
    for r in ranks["items"]:
        (device,) = r["devices"]
        assert r["rank"] is None
        mine = [w for w in work if w.device == device]
        lo, hi = min(w.start for w in mine), max(w.end for w in mine)
        assert {k: r[k] for k in PARTS} == split(mine, lo, hi)
        assert r["collective_wait_ns"] == wait[device]


@pytest.mark.parametrize("path", ["steps/breakdown", "ranks", "collectives"])
def test_unknown_trace_is_404(client: TestClient, path: str) -> None:
    response = client.get(f"/api/v1/traces/nope/{path}")
    assert response.status_code == 404
    assert "nope" in response.text


@pytest.mark.parametrize("path", ["steps/breakdown", "ranks", "collectives"])
def test_trace_not_ready_is_422(client: TestClient, path: str) -> None:
    trace_id = upload(client, [(H200.name, H200.read_bytes())])["id"]
    response = client.get(f"/api/v1/traces/{trace_id}/{path}")
    assert response.status_code == 422
    assert "not ready" in response.text


HTA_RANK0 = CORPUS / "kineto" / "hta__nccl_data_rank0_of_2.json.gz"


@pytest.mark.skipif(not HTA_RANK0.exists(), reason="corpus absent")
def test_hta_rank_file_collectives_match_the_raw_args(client: TestClient, ingest: Any) -> None:
    """One rank of HTA's 2-rank sample (NCCL 2.17 kernel names: `ncclKernel_AllReduce_RING_LL_
    Sum_float`): no peers to wait for, sizes and the group's busbw factor from the args."""
    body = _get(client, ingest(HTA_RANK0), "collectives")
    raw: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for w in kineto_work(HTA_RANK0):
        if w.category == COMM:
            args: dict[str, Any] = dict(w.args)
            size = max(args["In msg nelems"], args["Out msg nelems"]) * DTYPE[args["dtype"]]
            raw[(args["Collective name"], size)][0] += 1
            raw[(args["Collective name"], size)][1] += w.end - w.start
    got = {(r["collective"], r["msg_bytes"]): r for r in body["items"]}
    assert {k: [r["count"], r["total_ns"]] for k, r in got.items()} == dict(raw)
    for (collective, size), row in got.items():
        assert row["wait_ns"] == 0 and row["algorithm"] == "RING" and row["protocol"] == "LL"
        factor = 2 * (2 - 1) / 2 if collective == "allreduce" else 1.0  # nccl-tests, n = 2
        assert row["busbw_gbps"] == pytest.approx(size * row["count"] / row["total_ns"] * factor,
                                                  abs=1e-3)  # fmt: skip

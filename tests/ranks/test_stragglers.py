"""The straggler rule and the bus-bandwidth factors, on a two-rank job whose numbers the test
sets: rank 1 computes 100 µs where rank 0 computes 20, then both run one all-reduce."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from backend.core.config import Settings
from backend.services.analysis.collectives import busbw_factor
from backend.services.loading.pipeline import ingest_trace
from tests.factories import upload

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL128(ncclDevKernelArgsStorage<4096ul>)"


def _kernel(name: str, rank: int, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    kept = {"device": rank, "stream": 7, "correlation": 1, **args}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": 7, "ts": ts,
            "dur": dur, "args": kept}  # fmt: skip


def _rank(rank: int, compute_us: float) -> bytes:
    meta = {"Collective name": "allreduce", "In msg nelems": 1 << 20,
            "Out msg nelems": 1 << 20, "dtype": "BFloat16", "Group size": 2}  # fmt: skip
    events = [
        _kernel("gemm", rank, 10.0, compute_us),
        _kernel(NCCL, rank, 10.0 + compute_us, 130.0 - compute_us, **meta),
    ]
    doc = {
        "traceEvents": events, "schemaVersion": 1,
        "deviceProperties": [{"id": rank, "name": "NVIDIA H200", "numSms": 132,
                              "computeMajor": 9}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
    }  # fmt: skip
    return json.dumps(doc).encode()


def test_the_slow_rank_is_a_straggler_and_the_other_waited(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    files = [("job_rank0.json", _rank(0, 20.0)), ("job_rank1.json", _rank(1, 100.0))]
    trace_id = upload(client, files)["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    body = client.get(f"/api/v1/traces/{trace_id}/ranks").json()
    (straggler,) = body["stragglers"]
    assert straggler["rank"] == 1
    assert straggler["compute_ns"] == 100_000
    assert straggler["median_compute_ns"] == 60_000  # median of 20 and 100 µs
    assert straggler["others_wait_ns"] == 80_000  # rank 0 started the all-reduce 80 µs early
    assert "rank 1" in straggler["message"]
    waits = {r["rank"]: r["collective_wait_ns"] for r in body["items"]}
    assert waits == {0: 80_000, 1: 0}
    (row,) = client.get(f"/api/v1/traces/{trace_id}/collectives").json()["items"]
    assert (row["msg_bytes"], row["algorithm"], row["protocol"]) == (2 << 20, "RING", "LL128")
    assert row["total_ns"] == 110_000 + 30_000
    assert row["algbw_gbps"] == pytest.approx(2 * (2 << 20) / 140_000, abs=1e-3)


def test_equal_ranks_have_no_straggler(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    files = [("job_rank0.json", _rank(0, 50.0)), ("job_rank1.json", _rank(1, 52.0))]
    trace_id = upload(client, files)["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    assert client.get(f"/api/v1/traces/{trace_id}/ranks").json()["stragglers"] == []


@pytest.mark.parametrize(
    ("collective", "n", "factor"),
    [  # nccl-tests doc/PERFORMANCE.md: the bus bandwidth factors
        ("allreduce", 8, 2 * 7 / 8), ("all_reduce", 2, 1.0), ("allgather", 8, 7 / 8),
        ("_allgather_base", 4, 3 / 4), ("reduce_scatter", 8, 7 / 8),
        ("_reduce_scatter_base", 2, 1 / 2), ("all_to_all", 4, 3 / 4), ("broadcast", 8, 1.0),
        ("reduce", 8, 1.0), ("send", 2, 1.0), ("barrier", 8, None), ("allreduce", None, None),
        ("allreduce", 0, None),
    ],
)  # fmt: skip
def test_busbw_factors(collective: str, n: int | None, factor: float | None) -> None:
    got = busbw_factor(collective, n)
    assert got == (pytest.approx(factor) if factor is not None else None)

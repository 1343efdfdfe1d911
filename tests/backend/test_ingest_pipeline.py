"""The ingest pipeline end to end on SQLite and PostgreSQL: multi-file uploads become one
multi-rank trace, live progress is readable while the ingest transaction is open, and a
failure part-way through a large trace leaves no dataset."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import Settings
from backend.models import Trace, TraceStatus
from backend.services.loading.pipeline import ingest_trace
from backend.services.loading.progress import ProgressReporter
from tests.factories import stored_events, upload, upload_trace

SMALL_GPT = (
    Path(__file__).resolve().parents[1] / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
)


def _rank_trace(rank: int, n: int = 25) -> bytes:
    events = [
        {
            "ph": "X", "cat": "kernel", "name": f"ncclKernel_AllReduce_r{rank}", "pid": 0,
            "tid": 7, "ts": 10 + 4 * i, "dur": 3,
            "args": {"device": 0, "stream": 7, "correlation": i, "Collective name": "allreduce",
                     "In msg nelems": 1024, "Group size": 2},
        }
        for i in range(n)
    ]  # fmt: skip
    doc = {"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events}
    return gzip.compress(json.dumps(doc).encode())


def _events_by_rank(engine: Engine, trace_id: str) -> dict[Any, int]:
    return dict(Counter(e["rank"] for e in stored_events(engine, trace_id)))


def test_multi_file_upload_is_one_multi_rank_trace(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    files = [
        ("rank1.pt.trace.json.gz", _rank_trace(1)),
        ("rank0.pt.trace.json.gz", _rank_trace(0)),
    ]
    trace_id = upload(client, files)["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert trace["name"] == "rank1.pt.trace.json.gz + 1 more"
    assert [r["rank"] for r in trace["meta"]["ranks"]] == [0, 1]
    assert _events_by_rank(engine, trace_id) == {0: 25, 1: 25}
    kernels = client.get(f"/api/v1/traces/{trace_id}/kernels").json()["items"]
    assert {k["name"] for k in kernels} == {"ncclKernel_AllReduce_r0", "ncclKernel_AllReduce_r1"}


def test_progress_is_visible_while_processing(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace_id = upload_trace(client, SMALL_GPT, "t.json.gz")
    with Session(engine) as session:
        row = session.get(Trace, trace_id)
        assert row is not None
        row.status = TraceStatus.PROCESSING
        session.commit()
    ProgressReporter(engine, settings, trace_id).update(
        bytes_done=50, bytes_total=200, events=1234, force=True
    )
    progress = client.get(f"/api/v1/traces/{trace_id}").json()["progress"]
    assert progress == {"bytes_done": 50, "bytes_total": 200, "events": 1234, "fraction": 0.25}
    listed = client.get("/api/v1/traces").json()["items"][0]
    assert listed["progress"]["events"] == 1234

    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    assert client.get(f"/api/v1/traces/{trace_id}").json()["progress"] is None


def test_failure_deep_in_a_trace_leaves_no_dataset(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """30k good events (several write batches) and then a cut: nothing may stay behind."""
    body = ",\n  ".join(
        json.dumps({"ph": "X", "cat": "kernel", "name": "k", "ts": i, "dur": 1,
                    "args": {"stream": 7, "device": 0}})
        for i in range(30_000)
    )  # fmt: skip
    data = f'{{"traceEvents": [\n  {body}\n  ], "traceName": "x"}}'.encode()
    cut = data[: len(data) - 40]
    trace_id = upload_trace(client, cut, "cut.json")
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "failed"
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert "does not end properly" in trace["error"]
    assert "cut.json" in trace["error"] and "byte" in trace["error"]
    assert stored_events(engine, trace_id) == []
    folder = settings.blob_dir / "datasets" / trace_id
    assert not folder.exists() or list(folder.iterdir()) == []


DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"


def test_real_ddp_rank_files_show_every_ranks_lanes(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """Issue 11 on the real 2x H200 DDP trace: one upload of both rank files, lanes per rank."""
    names = [f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
    trace_id = upload(client, [(name, (DDP / name).read_bytes()) for name in names])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    timeline = client.get(f"/api/v1/traces/{trace_id}/timeline").json()
    gpu_labels = [lane["label"] for lane in timeline["lanes"] if "GPU" in lane["label"]]
    assert any(label.startswith("rank 0") for label in gpu_labels), gpu_labels
    assert any(label.startswith("rank 1") for label in gpu_labels), gpu_labels
    assert any("NCCL" in label for label in gpu_labels), gpu_labels
    summary = client.get(f"/api/v1/traces/{trace_id}/summary").json()["summary"]
    assert {d["rank"] for d in summary["devices"]} == {0, 1}

"""`/traces/{id}/memory-snapshot/*` on a real H200 snapshot: uploaded alone, and together
with the profiler trace of the same run (then it shows on that trace). Numbers are checked
against torch's own (`h200_memsnap.expected.json`) and the raw pickle read here; hostile
uploads fail the trace with a located error and run nothing."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading import ingest_trace
from tests.factories import Ingest, stored_events, upload

DATA = Path(__file__).resolve().parents[1] / "data" / "memsnap"
PICKLE = DATA / "h200_memsnap.pickle"
TRACE = DATA / "h200_memsnap.pt.trace.json.gz"
EXPECTED = json.loads((DATA / "h200_memsnap.expected.json").read_text())
VIEWS = ("segments", "fragmentation", "timeline", "stacks", "phases")


def _get(client: TestClient, url: str, **params: Any) -> Any:
    response = client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_snapshot_alone_is_a_trace_with_its_views(client: TestClient, ingest: Ingest) -> None:
    tid = ingest(PICKLE)
    trace = _get(client, f"/api/v1/traces/{tid}")
    assert trace["format"] == "torch_memory_snapshot"
    base = f"/api/v1/traces/{tid}/memory-snapshot"
    summary = _get(client, base)
    assert summary["peak"]["allocated"] == EXPECTED["max_memory_allocated"]
    assert summary["dump"]["reserved"] == EXPECTED["memory_reserved_at_dump"]
    assert summary["devices"] == [0]
    segments = _get(client, f"{base}/segments", limit=5, at="dump")
    assert segments["count"] == EXPECTED["stats"]["segment.all.current"]
    assert len(segments["items"]) == 5
    raw = pickle.loads(PICKLE.read_bytes())  # the committed fixture: trusted here
    first = min(raw["segments"], key=lambda s: s["address"])
    assert segments["items"][0]["address"] == first["address"]
    assert segments["items"][0]["size"] == first["total_size"]
    timeline = _get(client, f"{base}/timeline", max_points=10)
    assert len(timeline["allocated"]) <= 10
    assert max(timeline["allocated"]) == EXPECTED["max_memory_allocated"]  # the peak survives
    assert len(_get(client, f"{base}/stacks", limit=2)["items"]) == 2


def test_the_allocator_history_is_stored_as_memory_events(
    client: TestClient, engine: Engine, ingest: Ingest
) -> None:
    """Each alloc and free_completed entry becomes a profiler-style `[memory]` event, so the
    Memory tab and the timeline's counters read a snapshot as they read a profiler trace."""
    tid = ingest(PICKLE)
    raw = pickle.loads(PICKLE.read_bytes())
    entries = [e for e in raw["device_traces"][0] if e["action"] in ("alloc", "free_completed")]
    memory = [e for e in stored_events(engine, tid) if e["kind"] == "memory"]
    assert len(memory) == len(entries)
    assert sorted(e["start_ns"] for e in memory) == sorted(e["time_us"] * 1000 for e in entries)
    assert max(e["args"]["Total Allocated"] for e in memory) == EXPECTED["max_memory_allocated"]
    phases = [e for e in stored_events(engine, tid) if e["kind"] == "annotation"]
    starts = [a for a in raw["external_annotations"] if a["stage"] == "START"]
    assert len(phases) == len(starts)


def test_limits_and_other_formats(client: TestClient, ingest: Ingest) -> None:
    tid = ingest(PICKLE)
    base = f"/api/v1/traces/{tid}/memory-snapshot"
    for view, params in (
        ("segments", {"limit": 0}), ("segments", {"limit": 5001}), ("segments", {"at": "later"}),
        ("timeline", {"max_points": 9}), ("timeline", {"max_points": 4001}),
        ("stacks", {"limit": 21}), ("phases", {"limit": 0}), ("", {"device": -1}),
    ):  # fmt: skip
        response = client.get(f"{base}/{view}".rstrip("/"), params=params)
        assert response.status_code == 422, (view, params)
        assert response.json()["detail"]
    missing = client.get(base, params={"device": 3})
    assert missing.status_code == 404 and "has no device 3" in missing.json()["detail"]
    other = ingest(
        Path(__file__).resolve().parents[1] / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
    )
    for view in ("", *VIEWS):
        response = client.get(f"/api/v1/traces/{other}/memory-snapshot/{view}".rstrip("/"))
        assert response.status_code == 404
        assert "has no memory snapshot" in response.json()["detail"]
    assert client.get("/api/v1/traces/nope/memory-snapshot").status_code == 404


def test_uploaded_together_the_snapshot_shows_on_the_profiler_trace(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    accepted = upload(
        client, [(TRACE.name, TRACE.read_bytes()), (PICKLE.name, PICKLE.read_bytes())]
    )
    assert ingest_trace(engine=engine, settings=settings, trace_id=accepted["id"]) == "ready"
    tid = accepted["id"]
    trace = _get(client, f"/api/v1/traces/{tid}")
    assert trace["format"] == "torch_profiler"
    assert trace["meta"]["memory_snapshot"] == {"file": PICKLE.name}
    summary = _get(client, f"/api/v1/traces/{tid}/memory-snapshot")
    assert summary["peak"]["allocated"] == EXPECTED["max_memory_allocated"]
    kernels = [e for e in stored_events(engine, tid) if e["kind"] == "kernel"]
    assert kernels  # the profiler trace's own events, not the snapshot's
    phases = _get(client, f"/api/v1/traces/{tid}/memory-snapshot/phases")
    assert {"forward", "backward", "optimizer"} <= {p["name"] for p in phases["items"]}


class _Exploit:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.path}",))


def test_a_hostile_pickle_fails_the_trace_and_runs_nothing(
    client: TestClient, engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    evil = pickle.dumps({"segments": [_Exploit(marker)], "device_traces": []}, protocol=4)
    accepted = upload(client, [("snap.pickle", evil)])
    assert ingest_trace(engine=engine, settings=settings, trace_id=accepted["id"]) == "failed"
    error = _get(client, f"/api/v1/traces/{accepted['id']}")["error"]
    assert "refused pickle opcode STACK_GLOBAL" in error and "byte " in error
    assert not marker.exists()


def test_without_annotations_the_phases_come_from_the_profiler_trace(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """Older torch writes no `external_annotations`; uploaded with the profiler trace of the
    same run, the phases are the trace's record_function ranges (same host clock)."""
    raw = pickle.loads(PICKLE.read_bytes())  # the committed fixture: trusted here
    marks = raw.pop("external_annotations")
    bare = pickle.dumps(raw, protocol=4)
    files = [(TRACE.name, TRACE.read_bytes()), ("old_torch.pickle", bare)]
    tid = upload(client, files)["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=tid) == "ready"
    phases = _get(client, f"/api/v1/traces/{tid}/memory-snapshot/phases", limit=2000)
    assert phases["source"] == "the profiler trace's record_function ranges"
    by_name = {p["name"]: p for p in phases["items"]}
    assert {"train_step_0", "train_step_1", "forward", "backward", "optimizer"} <= set(by_name)
    # the trace's ranges sit within 0.1 ms of the snapshot's own marks of the same phase
    own = {(a["name"], a["stage"]): a["time_us"] for a in marks}
    step = by_name["train_step_1"]
    assert abs(step["start_us"] - own[("train_step_1", "START")]) < 100
    assert step["peak_allocated"] == EXPECTED["max_memory_allocated"]


def test_a_ranks_upload_takes_one_snapshot_and_refuses_two(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """The browser sends a trace and its snapshot as one `ranks=true` request; the rank
    check lets one snapshot through and names a second."""
    files = [
        ("file", (TRACE.name, TRACE.read_bytes())),
        ("file", (PICKLE.name, PICKLE.read_bytes())),
    ]
    response = client.post("/api/v1/traces", files=files, data={"ranks": "true"})
    assert response.status_code == 202, response.text
    assert ingest_trace(engine=engine, settings=settings, trace_id=response.json()["id"]) == "ready"
    two = [*files, ("file", ("again.pickle", PICKLE.read_bytes()))]
    refused = client.post("/api/v1/traces", files=two, data={"ranks": "true"})
    assert refused.status_code == 422
    assert "2 memory snapshots" in refused.text and "again.pickle" in refused.text

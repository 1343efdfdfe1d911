"""Chrome-trace export: valid for Perfetto, it reads back with the same kernel stats, and it
carries the CPU launch → GPU work flows (`ac2g`) its source had."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace
from tests.factories import Ingest, upload
from tests.timeline.conftest import H200, H200_SMALL, SYNTHETIC
from tests.timeline.flow_pairs import (
    GPU_CATEGORIES,
    chrome_doc,
    chrome_flows,
    chrome_points,
    nsys_pairs,
)

KERNEL_FIELDS = ("name", "count", "total_ns", "min_ns", "max_ns")
DATA = Path(__file__).resolve().parents[1] / "data"


def _kernels(client: TestClient, trace_id: str) -> list[tuple[object, ...]]:
    items = client.get(f"/api/v1/traces/{trace_id}/kernels", params={"limit": 100_000}).json()
    return [tuple(k[f] for f in KERNEL_FIELDS) for k in items["items"]]


def _export(client: TestClient, trace_id: str) -> bytes:
    response = client.get(f"/api/v1/traces/{trace_id}/export.json")
    assert response.status_code == 200
    body: bytes = response.content
    return body


def _check_flows_land(doc: dict[str, Any]) -> None:
    """Every `f` sits on an exported GPU event (same pid, tid and ts), every `s` on a
    runtime call, and no two launches share an id."""
    flows = chrome_flows(doc)
    gpu = chrome_points(doc, GPU_CATEGORIES)
    calls = chrome_points(doc, frozenset({"cuda_runtime"}))
    assert all(gpu[end] for ends in flows.ends.values() for end in ends)
    assert all(calls[start] for starts in flows.starts.values() for start in starts)
    assert all(len(starts) == 1 for starts in flows.starts.values())
    assert flows.ends.keys() <= flows.starts.keys()


@pytest.mark.parametrize("path", [H200, SYNTHETIC], ids=lambda p: p.name.split(".")[0])
def test_export_reads_back_with_the_same_kernel_stats(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    trace_id = ingest(path)
    response = client.get(f"/api/v1/traces/{trace_id}/export.json")
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"]
    doc = json.loads(response.content)
    phases = {e["ph"] for e in doc["traceEvents"]}
    assert phases <= {"X", "i", "M", "s", "f"} and "X" in phases
    assert all("ts" in e for e in doc["traceEvents"] if e["ph"] != "M")
    assert {"process_name", "thread_name"} <= {e["name"] for e in doc["traceEvents"]}

    again = ingest(response.content, "export.json")
    back = client.get(f"/api/v1/traces/{again}").json()
    assert back["format"] == "torch_profiler"
    original = client.get(f"/api/v1/traces/{trace_id}").json()
    assert back["event_counts"] == original["event_counts"]
    assert _kernels(client, again) == _kernels(client, trace_id)
    # The flows are rebuilt from what was stored, so the export of the export has them too.
    first = chrome_flows(chrome_doc(response.content)).pairs()
    assert chrome_flows(chrome_doc(_export(client, again))).pairs() == first


@pytest.mark.parametrize("path", [H200, H200_SMALL], ids=lambda p: p.name.split(".")[0])
def test_export_has_the_source_flows(client: TestClient, ingest: Ingest, path: Path) -> None:
    """Each `ac2g` pair of the torch.profiler file (a launch and its GPU work, both ends
    present) comes out with the same id, tracks and ns; the only other flows are the
    file's own (`fwdbwd`, test_export_source_flows.py)."""
    raw = chrome_doc(path.read_bytes())
    source = chrome_flows(raw)
    expected = source.pairs()
    assert sum(expected.values()) > 50  # the fixture has flows to lose

    doc = chrome_doc(_export(client, ingest(path)))
    flows = chrome_flows(doc)
    assert flows.pairs() == expected
    assert sum(len(ends) for ends in flows.ends.values()) == sum(expected.values())
    ids = {i for i, ends in source.ends.items() if len(source.starts.get(i, ())) == 1}
    assert flows.ends.keys() == ids  # single rank: the flow id is Kineto's, the correlation
    assert all(e["bp"] == "e" for e in doc["traceEvents"] if e["ph"] == "f")
    source_kinds = {(e["cat"], e["name"]) for e in raw["traceEvents"] if e.get("ph") in "sf"}
    assert {(e["cat"], e["name"]) for e in doc["traceEvents"] if e["ph"] in "sf"} == (source_kinds)
    _check_flows_land(doc)


def test_multirank_export_keeps_each_ranks_flows_apart(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """The real 2-GPU DDP run, both ranks in one upload: both ranks' correlation ids run
    1331..6783, so the export gives rank 1's flows other ids (rank 0 keeps its own)."""
    names = [DATA / "ddp" / f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
    trace_id = upload(client, [(p.name, p.read_bytes()) for p in names])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    sources = [chrome_flows(chrome_doc(p.read_bytes())) for p in names]

    doc = chrome_doc(_export(client, trace_id))
    flows = chrome_flows(doc)
    assert flows.pairs() == sources[0].pairs() + sources[1].pairs()
    _check_flows_land(doc)
    rank0 = {i for i, ends in flows.ends.items() if ends[0][0] == 0}  # f on GPU 0
    assert rank0 == {i for i, s in sources[0].starts.items() if i in sources[0].ends}


@pytest.mark.parametrize("name", ["train_step", "nccl_2gpu"])
def test_nsys_export_links_each_launch_to_its_gpu_work(
    client: TestClient, ingest: Ingest, name: str
) -> None:
    """Nsight Systems: every kernel, memcpy and memset with a runtime call of its process
    and correlation id gets a flow from that call. `train_step` replays a CUDA graph (one
    launch, three kernels: one `s`, three `f`); `nccl_2gpu` has two processes whose
    correlation ids overlap."""
    path = DATA / "nsys" / f"{name}.sqlite"
    expected = nsys_pairs(path)
    doc = chrome_doc(_export(client, ingest(path)))
    flows = chrome_flows(doc)
    assert flows.pairs() == expected
    _check_flows_land(doc)
    fan_out = Counter(len(ends) for ends in flows.ends.values())
    assert fan_out == Counter(Counter(start for start, _ in expected.elements()).values())

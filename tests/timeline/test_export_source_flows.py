"""Chrome-trace export keeps the source's own flows (Kineto's forward → backward `fwdbwd`):
each pair of the raw torch.profiler file, read here as JSON, comes out on the same thread
and ns with the same id; the `ac2g` flows are unchanged, and a dataset written before
flows were kept exports without them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import Settings
from backend.models import Trace
from backend.services.datasets.layout import FLOWS_FILE, dataset_dir
from backend.services.loading.pipeline import ingest_trace
from tests.factories import Ingest, upload
from tests.timeline.flow_pairs import chrome_doc, chrome_flows, point

TORCH = Path(__file__).resolve().parents[1] / "data" / "torch"
DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"
WITH_FWDBWD = ["h200_gpt_small", "h200_ops_stack", "h200_compiled_steps", "h200_compile"]


def _export(client: TestClient, trace_id: str) -> bytes:
    response = client.get(f"/api/v1/traces/{trace_id}/export.json")
    assert response.status_code == 200
    body: bytes = response.content
    return body


def _dataset(engine: Engine, settings: Settings, trace_id: str) -> Path:
    with Session(engine) as session:
        trace = session.get(Trace, trace_id)
        assert trace is not None and trace.dataset
        return dataset_dir(settings.blob_dir, trace_id, trace.dataset)


def _phases(doc: dict[str, object], cat: str) -> Counter[str]:
    events = doc["traceEvents"]
    assert isinstance(events, list)
    return Counter(e["ph"] for e in events if e.get("cat") == cat and e.get("ph") in "stf")


@pytest.mark.parametrize("name", WITH_FWDBWD)
def test_export_has_the_files_fwdbwd_flows(client: TestClient, ingest: Ingest, name: str) -> None:
    path = TORCH / f"{name}.pt.trace.json.gz"
    raw = chrome_doc(path.read_bytes())
    source = chrome_flows(raw, "fwdbwd")
    assert sum(source.pairs().values()) >= 12  # the fixture has flows to lose

    doc = chrome_doc(_export(client, ingest(path)))
    flows = chrome_flows(doc, "fwdbwd")
    assert _phases(doc, "fwdbwd") == _phases(raw, "fwdbwd")
    assert flows.pairs() == source.pairs()
    assert dict(flows.starts) == dict(source.starts)  # single rank: Kineto's own ids
    assert dict(flows.ends) == dict(source.ends)
    ends = [e for e in doc["traceEvents"] if e.get("cat") == "fwdbwd" and e["ph"] == "f"]
    assert all(e["bp"] == "e" and e["name"] == "fwdbwd" for e in ends)
    # Each end sits on an exported op (Perfetto binds it to the enclosing slice).
    base = int(doc["baseTimeNanoseconds"])
    ops = {point(e, base) for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "cpu_op"}
    assert all(end in ops for ends_ in flows.ends.values() for end in ends_)
    assert chrome_flows(doc).pairs() == chrome_flows(raw).pairs()  # ac2g unchanged


def test_flows_file_binds_each_point_to_its_op(
    ingest: Ingest, engine: Engine, settings: Settings
) -> None:
    """The stored `event_id` of each `fwdbwd` point is the op the raw file has there."""
    path = TORCH / "h200_gpt_small.pt.trace.json.gz"
    trace_id = ingest(path)
    folder = _dataset(engine, settings, trace_id)
    bound = duckdb.sql(
        f"SELECT f.pid, f.tid, f.ts_ns, e.name, e.start_ns FROM '{folder / FLOWS_FILE}' f "
        f"JOIN '{folder / 'events.parquet'}' e ON e.id = f.event_id WHERE f.cat = 'fwdbwd'"
    ).fetchall()
    raw = chrome_doc(path.read_bytes())
    base = int(raw["baseTimeNanoseconds"])
    ops: dict[tuple[int, int, int], set[str]] = {}
    for e in raw["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            ops.setdefault(point(e, base), set()).add(e["name"])
    assert len(bound) == 564
    assert all(name in ops[(pid, tid, ts)] and start == ts for pid, tid, ts, name, start in bound)


def test_trace_ingested_before_flows_were_kept_still_exports(
    client: TestClient, ingest: Ingest, engine: Engine, settings: Settings
) -> None:
    """A dataset without `flows.parquet` (parser version 2) exports its events and `ac2g`
    flows, and no `fwdbwd`: an absent file means no source flows."""
    path = TORCH / "h200_ops_stack.pt.trace.json.gz"
    trace_id = ingest(path)
    flows = _dataset(engine, settings, trace_id) / FLOWS_FILE
    with_flows = chrome_doc(_export(client, trace_id))
    flows.unlink()

    doc = chrome_doc(_export(client, trace_id))
    assert _phases(doc, "fwdbwd") == Counter()
    assert chrome_flows(doc).pairs() == chrome_flows(with_flows).pairs()
    kept = [e for e in with_flows["traceEvents"] if e.get("cat") != "fwdbwd"]
    assert doc["traceEvents"] == kept


def test_multirank_export_keeps_each_ranks_fwdbwd_apart(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """Both DDP ranks number their `fwdbwd` flows from 1: rank 0 keeps its ids, rank 1's
    move, and every pair is still its file's pair."""
    names = [DDP / f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
    trace_id = upload(client, [(p.name, p.read_bytes()) for p in names])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    sources = [chrome_flows(chrome_doc(p.read_bytes()), "fwdbwd") for p in names]
    assert set(sources[0].starts) & set(sources[1].starts)  # the ids collide in the files

    flows = chrome_flows(chrome_doc(_export(client, trace_id)), "fwdbwd")
    assert flows.pairs() == sources[0].pairs() + sources[1].pairs()
    assert all(len(starts) == 1 for starts in flows.starts.values())
    rank0 = {i for i, s in flows.starts.items() if s[0] in sources[0].starts.get(i, [])}
    assert rank0 == set(sources[0].starts)

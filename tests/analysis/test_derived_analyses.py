"""The analyses derived at ingest (issue #35): read over several parts, and derived once on
first read for a dataset written before them.

Parts: the real 2-rank DDP job's events split by rank into two files (rank 1's ids moved
by an offset, as a partitioned ingest may number them), each derived as its own part; every
route must answer as from the one part (collectives pair kernels across the parts), and the
merged `/operators` must equal the sums of each rank file ingested alone and, per op name,
the raw files' calls and CPU time for every op name that never nests in itself.
"""

from __future__ import annotations

import threading
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import Session

from backend.core.config import Settings
from backend.models import Trace
from backend.services.analysis.derive import derive_analyses
from backend.services.datasets import ANALYSIS_TABLES
from backend.services.loading.pipeline import ingest_trace
from tests.factories import Ingest, upload, upload_and_ingest
from tests.timeline.raw_chrome import raw_events, read_doc

DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"
DDP_FILES = [DDP / f"ddp_rank{rank}.pt.trace.json.gz" for rank in (0, 1)]
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
# Every route answered from the derived tables.
ROUTES = (
    "operators?limit=5000",
    "operators?group=shape&limit=5000",
    "operators/stacks",
    "steps/breakdown",
    "ranks",
    "collectives",
    "memory/ops",
    "memory/peak",
)
FIELDS = ("count", "cpu_total_ns", "cpu_self_ns", "device_total_ns", "device_self_ns")


def _folder(engine: Engine, settings: Settings, trace_id: str) -> Path:
    with Session(engine) as session:
        trace = session.get(Trace, trace_id)
        assert trace is not None and trace.dataset
        return settings.blob_dir / "datasets" / trace_id / trace.dataset


def _derived(folder: Path) -> list[str]:
    tables = tuple(f"{t}-" for t in ANALYSIS_TABLES)
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(("analyses-", *tables)))


def _get(client: TestClient, trace_id: str, path: str, **params: Any) -> Any:
    response = client.get(f"/api/v1/traces/{trace_id}/{path}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _job(client: TestClient, engine: Engine, settings: Settings) -> str:
    files = [(p.name, p.read_bytes()) for p in DDP_FILES]
    trace_id = str(upload(client, files)["id"])
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    return trace_id


@SQLITE_ONLY
def test_a_dataset_without_the_tables_is_derived_once_on_first_read(
    client: TestClient, ingest: Ingest, engine: Engine, settings: Settings
) -> None:
    tid = ingest(DDP_FILES[0])
    before = {p: _get(client, tid, p) for p in ROUTES}
    folder = _folder(engine, settings, tid)
    written = _derived(folder)
    assert "analyses-0.json" in written and "operators-0.parquet" in written
    for name in written:  # as a dataset ingested before the derived tables
        (folder / name).unlink()
    answers: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda: answers.append(_get(client, tid, ROUTES[0])))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [before[ROUTES[0]]] * 4
    assert {p: _get(client, tid, p) for p in ROUTES} == before
    assert _derived(folder) == written
    assert not [p for p in folder.iterdir() if p.name.startswith(".tmp-")]


def _split_by_rank(folder: Path) -> None:
    """Replace part 0 by one part per rank, rank 1's ids moved by an offset."""
    events = pq.read_table(folder / "events.parquet")
    for name in _derived(folder):
        (folder / name).unlink()
    for rank in (0, 1):
        part = events.filter(pc.equal(events["rank"], rank))
        if rank:
            ids = pc.add(part["id"], 1_000_000_000)
            part = part.set_column(part.schema.get_field_index("id"), "id", ids)
        path = folder / f"events-r{rank}.parquet"
        pq.write_table(part, path)
        derive_analyses(path, folder, f"r{rank}")
        path.unlink()


def _by_name(body: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {i["name"]: {f: i[f] for f in FIELDS} for i in body["items"]}


@SQLITE_ONLY
def test_parts_merge_to_the_sums_of_the_ranks(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    job = _job(client, engine, settings)
    whole = {p: _get(client, job, p) for p in ROUTES}
    _split_by_rank(_folder(engine, settings, job))
    assert {p: _get(client, job, p) for p in ROUTES} == whole  # collectives pair across parts
    merged = whole[ROUTES[0]]
    alone = [
        _by_name(_get(client, upload_and_ingest(client, engine, settings, p), "operators",
                      limit=5000))
        for p in DDP_FILES
    ]  # fmt: skip
    sums: dict[str, Counter[str]] = {}
    for one in alone:
        for name, row in one.items():
            sums.setdefault(name, Counter()).update(row)
    assert _by_name(merged) == {n: dict(c) for n, c in sums.items()}
    # From the raw files: an op name that never runs inside a call of its own name has
    # count = its calls and CPU total = their summed durations, over both ranks.
    calls: dict[str, list[tuple[Any, ...]]] = {}
    for rank, path in enumerate(DDP_FILES):
        for e in raw_events(read_doc(path)):
            if e.cat == "cpu_op" and e.name.startswith("aten::"):
                calls.setdefault(e.name, []).append((rank, e.pid, e.tid, e.start_ns, e.end_ns))
    ours = _by_name(merged)
    checked = 0
    for name, found in calls.items():
        found.sort()
        nested = any(a[:3] == b[:3] and b[3] < a[4] for a, b in pairwise(found))
        if nested or name not in ours:  # nested: torch's tree rules apply; absent: filtered
            continue
        assert (ours[name]["count"], ours[name]["cpu_total_ns"]) == (
            len(found),
            sum(c[4] - c[3] for c in found),
        ), name
        checked += 1
    assert checked >= 20

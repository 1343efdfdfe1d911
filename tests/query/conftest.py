"""One app and database for the module, with real traces ingested once (SQLite).

The query service reads only the dataset files and the trace row, so it is tested on one
SQL engine; the traces cover each parser family: Kineto (the 186k-event H200 GPT trace,
a small H200 train step, a two-rank DDP job), nsys exports, and the corpus's H200 files
when PERFDASH_TEST_CORPUS points at them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.services.loading import ingest_trace
from tests.conftest import CORPUS, DATA, REPO, app_with_traces
from tests.factories import upload

TRACES = {
    "h200_gpt_12l": REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz",
    "h200_train_step": DATA / "torch" / "h200_train_step.pt.trace.json.gz",
    "nsys_nccl_2gpu": DATA / "nsys" / "nccl_2gpu.sqlite",
    "nsys_train_step": DATA / "nsys" / "train_step.sqlite",
    "nsys_copies": DATA / "nsys" / "copies.sqlite",
    "rocprof_v1": DATA / "rocprof" / "v1_old_results.csv",
    "corpus_h200_nsys": CORPUS / "h200" / "nsys2025.3_small.sqlite",
    "corpus_h200_torch": CORPUS / "h200" / "torch2.11_gemm_loop.json",
}
DDP = DATA / "ddp"


@dataclass
class World:
    """The module's client and its ready traces by name (`ddp`: both ranks, one trace)."""

    client: TestClient
    traces: dict[str, str]

    def query(self, trace: str, sql: str, limit: int = 1000, status: int = 200) -> Any:
        """POST a query to the named trace; asserts the status, returns the JSON."""
        response = self.client.post(
            f"/api/v1/traces/{self.traces.get(trace, trace)}/query",
            json={"sql": sql, "limit": limit},
        )
        assert response.status_code == status, response.text
        return response.json()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("query")
    with app_with_traces(folder, TRACES) as (client, settings, traces):
        ranks = [(p.name, p.read_bytes()) for p in sorted(DDP.glob("ddp_rank*.json.gz"))]
        traces["ddp"] = str(upload(client, ranks)["id"])
        status = ingest_trace(engine=get_engine(), settings=settings, trace_id=traces["ddp"])
        assert status == "ready"
        yield World(client, traces)


@pytest.fixture
def setting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`setting(NAME=value)`: change PERFDASH_* settings for one test, re-read them."""

    def apply(**values: str) -> None:
        for key, value in values.items():
            monkeypatch.setenv(f"PERFDASH_{key.upper()}", value)
        get_settings.cache_clear()

    yield apply
    monkeypatch.undo()
    get_settings.cache_clear()

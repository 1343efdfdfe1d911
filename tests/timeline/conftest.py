"""Fixtures: real traces ingested through the real ingest service, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
SYNTHETIC = REPO / "backend" / "sample_data" / "synthetic_train_8gpu_rank0.pt.trace.json.gz"

Ingest = Callable[[Path], str]


@pytest.fixture
def ingested(client: TestClient, engine: Engine, settings: Settings) -> Ingest:
    """Upload a file through the API and run the ingest service on it; returns the id."""

    def ingest(path: Path) -> str:
        response = client.post("/api/v1/traces", files={"file": (path.name, path.read_bytes())})
        assert response.status_code == 202, response.text
        trace_id: str = response.json()["id"]
        assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
        return trace_id

    return ingest

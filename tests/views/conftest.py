"""Fixtures for the trace-view tests: traces uploaded and ingested through the real service."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace

Ingest = Callable[[Path | bytes, str], str]


@pytest.fixture
def ingest(client: TestClient, engine: Engine, settings: Settings) -> Ingest:
    """Upload a file (or bytes) under a name, ingest it in-process, return the trace id."""

    def run(source: Path | bytes, name: str = "trace.json") -> str:
        content = source.read_bytes() if isinstance(source, Path) else source
        response = client.post("/api/v1/traces", files={"file": (name, content)})
        assert response.status_code == 202, response.text
        trace_id = str(response.json()["id"])
        status = ingest_trace(engine=engine, settings=settings, trace_id=trace_id)
        assert status == "ready", client.get(f"/api/v1/traces/{trace_id}").json()["error"]
        return trace_id

    return run

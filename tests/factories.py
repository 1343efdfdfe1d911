"""Plain functions that put test data into perfdash the way users do: through the API, and
through the ingest service a worker would run.

Fixtures stay in the `conftest.py` files; these take the client, engine and settings they
need as arguments, so a test reads as the steps a user takes. Each API call asserts the
status code the step must answer with and shows the API's text when it does not.

Public surface: traces (`upload`, `upload_trace`, `upload_and_ingest`, `wait_for_trace`,
`Ingest`, `stored_events`, `insert_traces` for many list rows at once), metrics and SLAs
(`native`, `post_metrics`, `post_sla`), and `token_headers`.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import orjson
import pyarrow.parquet as pq
from fastapi.testclient import TestClient
from sqlalchemy import insert, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import Settings, get_settings
from backend.models.traces import Trace
from backend.services.auth.tokens import create_token
from backend.services.loading.pipeline import ingest_trace

TRACES = "/api/v1/traces"
DONE = ("ready", "failed")


class Ingest(Protocol):
    """The `ingest` fixture: `upload_and_ingest` bound to the test's client and database."""

    def __call__(self, source: Path | bytes, name: str | None = None) -> str: ...


def upload(client: TestClient, files: Sequence[tuple[str, bytes]]) -> dict[str, Any]:
    """POST files as one upload (several files become one trace); expects 202.

    Returns:
        The API's answer: the trace's `id`, its `status` and whether it was a `duplicate`.
    """
    response = client.post(TRACES, files=[("file", named) for named in files])
    assert response.status_code == 202, response.text
    body: dict[str, Any] = response.json()
    return body


def upload_trace(client: TestClient, source: Path | bytes, name: str | None = None) -> str:
    """Upload one file (its own name unless `name` is given; bytes default to
    `trace.json`) and return the queued trace's id."""
    if isinstance(source, Path):
        content, default = source.read_bytes(), source.name
    else:
        content, default = source, "trace.json"
    return str(upload(client, [(name or default, content)])["id"])


def upload_and_ingest(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    source: Path | bytes,
    name: str | None = None,
    *,
    expect: str | None = "ready",
) -> str:
    """Upload a file and run the ingest service on it in-process, as a worker would.

    Args:
        expect: the status the ingest must end in (the trace's error is shown when it
            does not); None to leave the outcome to the test.

    Returns:
        The trace id.
    """
    trace_id = upload_trace(client, source, name)
    status = ingest_trace(engine=engine, settings=settings, trace_id=trace_id)
    if expect is not None:
        assert status == expect, client.get(f"{TRACES}/{trace_id}").json()["error"]
    return trace_id


def stored_events(engine: Engine, trace_id: str) -> list[dict[str, Any]]:
    """The trace's stored events, read straight from its `events.parquet` with pyarrow (the
    documented layout `<STORAGE_DIR>/datasets/<trace>/<dataset>/`, not perfdash's reader), in
    id order, args parsed; [] when the trace names no dataset."""
    with engine.connect() as conn:
        query = text("SELECT dataset FROM traces WHERE id = :t")
        dataset = conn.execute(query, {"t": trace_id}).scalar()
    if dataset is None:
        return []
    path = get_settings().blob_dir / "datasets" / trace_id / dataset / "events.parquet"
    rows = pq.read_table(path).sort_by("id").to_pylist()
    for row in rows:
        row["args"] = orjson.loads(row["args"]) if row["args"] is not None else None
    return rows


def wait_for_trace(
    client: TestClient,
    trace_id: str,
    states: Collection[str] = DONE,
    timeout_s: float = 90,
    poll_s: float = 0.1,
) -> dict[str, Any]:
    """Poll a trace until a real worker has brought it into one of `states`.

    Returns:
        The trace as `GET /api/v1/traces/{id}` gives it.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        trace: dict[str, Any] = client.get(f"{TRACES}/{trace_id}").json()
        if trace["status"] in states:
            return trace
        if time.monotonic() > deadline:
            raise AssertionError(f"trace {trace_id} still {trace['status']} after {timeout_s}s")
        time.sleep(poll_s)


def native(
    *,
    commit: str = "c0",
    run_id: str | None = None,
    branch: str = "main",
    benchmark: str = "train",
    points: list[dict[str, Any]] | None = None,
    environment: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A native metrics document with sensible defaults (project `llm`, one
    `step_time_ms` point of three samples)."""
    return {
        "project": "llm",
        "benchmark": benchmark,
        "commit": commit,
        "branch": branch,
        "run_id": run_id or f"run-{commit}",
        "environment": environment or {"gpu_model": "H200"},
        "points": points
        or [{"metric": "step_time_ms", "unit": "ms", "samples": [10.0, 11.0, 12.0]}],
        **extra,
    }


def post_metrics(client: TestClient, auth: dict[str, str], **fields: Any) -> dict[str, Any]:
    """POST `native(**fields)` to `/api/v1/metrics`; expects 200.

    Returns:
        The push's answer, with the SLA `verdicts` it caused.
    """
    response = client.post("/api/v1/metrics", json=native(**fields), headers=auth)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def post_sla(client: TestClient, auth: dict[str, str], **fields: Any) -> dict[str, Any]:
    """POST an SLA on `llm`/`train`/`step_time_ms` (unless `fields` say otherwise);
    expects 201. Returns the stored SLA."""
    body = {"project": "llm", "benchmark": "train", "metric": "step_time_ms", **fields}
    response = client.post("/api/v1/slas", json=body, headers=auth)
    assert response.status_code == 201, response.text
    sla: dict[str, Any] = response.json()
    return sla


def token_headers(engine: Engine, *scopes: str, name: str = "tests") -> dict[str, str]:
    """Create an API token with `scopes`, the way `perfdash token create` does, and return
    the `Authorization` header that carries it."""
    with Session(engine) as session:
        plaintext, _ = create_token(session, name, list(scopes))
    return {"Authorization": f"Bearer {plaintext}"}


def insert_traces(engine: Engine, rows: Sequence[dict[str, Any]]) -> list[str]:
    """Insert trace rows straight into the table (no blob, no dataset), for list tests that
    need hundreds: each row's fields override defaults (a ready `torch_profiler` trace in
    project `default`, created one minute after the one before, from 2026-01-01 UTC).

    Returns:
        The ids, in the order of `rows`.
    """
    start = datetime(2026, 1, 1, tzinfo=UTC)
    full = []
    for i, row in enumerate(rows):
        counts = row.get("event_counts", {"kernel": i})
        created = row.get("created_at", start + timedelta(minutes=i))
        full.append(
            {
                "id": uuid.uuid4().hex, "name": f"trace-{i:05d}", "project": "default",
                "status": "ready", "error": None, "format": "torch_profiler",
                "blob_sha256": hashlib.sha256(uuid.uuid4().bytes).hexdigest(),
                "size_bytes": 1000 + i, "event_counts": counts, "devices": [],
                "trace_metadata": {}, "skipped_events": 0, "warnings": [], "tags": [],
                "note": None, "ingest_attempts": 0, "created_at": created, "updated_at": created,
                **row, "event_total": sum(counts.values()),
            }
        )  # fmt: skip
    with engine.begin() as conn:
        conn.execute(insert(Trace), full)
    return [r["id"] for r in full]

"""`perfdash serve` seeds an empty database with the traces in `backend/sample_data`."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.core.config import Settings
from tests.conftest import REPO
from workers.cli.serve import SAMPLE_DIR, seed_samples


def test_the_samples_are_read_from_backend_sample_data() -> None:
    assert SAMPLE_DIR == REPO / "backend" / "sample_data"
    assert len(list(SAMPLE_DIR.glob("*.json.gz"))) == 2


def test_an_empty_database_is_seeded_once(client: TestClient, settings: Settings) -> None:
    assert seed_samples() == 2
    listed = client.get("/api/v1/traces").json()["items"]
    assert sorted(t["name"] for t in listed) == [
        "sample: h200_train_step",
        "sample: synthetic_train_8gpu_rank0",
    ]
    assert {t["project"] for t in listed} == {"samples"}
    assert seed_samples() == 0, "a database with traces is left alone"

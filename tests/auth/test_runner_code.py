"""No code runs on a runner unless an admin put it there (issue #25, item 1).

The probe that found the hole: a `benchmarks:write` token stored a `callable` spec
naming `logging.config:fileConfig` with the blob-store path of an uploaded INI file, and
the runner executed the INI's `args=` line. Each layer is tested on its own: who may
store such a spec (tests/auth/test_roles.py), which callables a runner will import, which
paths a spec may name, and which `Host` names the server answers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import Settings, get_settings
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec, RunStatus
from tests.auth.conftest import MakeClient
from tests.factories import token_headers
from workers.bench.external import WorkloadError, load_callable
from workers.cli.serve import build_app
from workers.tasks.benchmarks import execute_run


@pytest.mark.parametrize(
    "target", ["logging.config:fileConfig", "os:system", "subprocess:run", "builtins:exec"]
)
def test_a_runner_refuses_callables_that_nobody_registered(target: str) -> None:
    with pytest.raises(WorkloadError, match="is not registered"):
        load_callable(target)


def test_the_shipped_examples_stay_runnable() -> None:
    assert callable(load_callable("workers.bench.examples:fail"))


@pytest.fixture
def team_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An installed package `team_bench` declaring one `perfdash.workloads` entry point."""
    (tmp_path / "team_bench.py").write_text("def step(params, seed, device):\n    return []\n")
    dist = tmp_path / "team_bench-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: team-bench\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[perfdash.workloads]\nllama-step = team_bench:step\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("team_bench", None)


@pytest.mark.usefixtures("team_package")
def test_registered_entry_points_run_by_name_or_by_value() -> None:
    assert load_callable("llama-step") is load_callable("team_bench:step")
    with pytest.raises(WorkloadError, match="is not registered"):
        load_callable("team_bench:other")


def _storage_params(settings: Settings) -> list[dict[str, object]]:
    blob = settings.blob_dir / "ab" / "abcdef.ini"
    outside = settings.blob_dir.parent / "elsewhere" / ".." / settings.blob_dir.name / "x.ini"
    return [
        {"config": str(blob)},
        {"args": ["--config", f"--ini={outside}"]},
        {"nested": {"list": [f"file://{blob}"]}},
        {"db": str(settings.data_dir / "perfdash.db")},
    ]


def test_specs_may_not_name_files_in_perfdash_storage(
    make_client: MakeClient, engine: Engine
) -> None:
    client = make_client("password")
    headers = token_headers(engine, "admin", name="ops")
    for params in _storage_params(get_settings()):
        spec = {"name": "gemm", "workload": "gemm", "params": params}
        answer = client.post("/api/v1/benchmarks", json=spec, headers=headers)
        assert answer.status_code == 422, params
        assert "inside perfdash's storage" in answer.json()["detail"]
    command = {"name": "cmd", "kind": "command", "command": ["cat", str(get_settings().blob_dir)]}
    assert client.post("/api/v1/benchmarks", json=command, headers=headers).status_code == 422
    env = {"name": "gemm", "workload": "gemm", "env": {"CONFIG": str(get_settings().blob_dir)}}
    assert client.post("/api/v1/benchmarks", json=env, headers=headers).status_code == 422
    fine = {"name": "gemm", "workload": "gemm", "params": {"data": "/srv/datasets/a.bin"}}
    assert client.post("/api/v1/benchmarks", json=fine, headers=headers).status_code == 200


def test_a_stored_spec_naming_storage_is_failed_before_it_runs(
    engine: Engine, settings: Settings
) -> None:
    """A spec stored before the check existed (written straight to the table)."""
    with Session(engine) as db:
        spec = BenchmarkSpec(
            name="old",
            kind="callable",
            workload="workers.bench.examples:fail",
            params={"config": str(settings.blob_dir / "ab" / "x.ini")},
        )
        db.add(spec)
        db.commit()
        assert spec.id is not None
        db.add(BenchmarkRun(id="r1", spec_id=spec.id, trigger="api"))
        db.commit()
    assert execute_run("r1", runner="test") == "failed"
    with Session(engine) as db:
        run = db.get(BenchmarkRun, "r1")
        assert run is not None and run.status == RunStatus.FAILED
        assert "inside perfdash's storage" in (run.error or "")


@pytest.fixture
def served(settings: Settings) -> Callable[[str], TestClient]:
    """`served(bind_host)`: a client of the app that `perfdash serve --host` builds."""

    def make(bind_host: str) -> TestClient:
        get_settings.cache_clear()
        return TestClient(build_app(bind_host, 8000), base_url="http://127.0.0.1:8000")

    return make


@pytest.mark.parametrize("host", ["rebind.evil.example", "rebind.evil.example:8000", "", "[::2]"])
def test_a_foreign_host_header_is_refused(served: Callable[[str], TestClient], host: str) -> None:
    answer = served("127.0.0.1").get("/api/v1/traces", headers={"Host": host})
    assert answer.status_code == 400
    assert "PERFDASH_ALLOWED_HOSTS" in answer.json()["detail"]
    page = served("127.0.0.1").get("/", headers={"Host": host})
    assert page.status_code == 400


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost", "LOCALHOST:80", "[::1]:8000"])
def test_loopback_names_are_served(served: Callable[[str], TestClient], host: str) -> None:
    assert served("127.0.0.1").get("/api/v1/traces", headers={"Host": host}).status_code == 200


def test_the_bind_host_is_served_and_a_wildcard_bind_adds_nothing(
    served: Callable[[str], TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Host": "10.1.2.3:8000"}
    assert served("10.1.2.3").get("/api/v1/traces", headers=headers).status_code == 200
    monkeypatch.setenv("PERFDASH_ALLOW_ANONYMOUS", "true")
    assert served("0.0.0.0").get("/api/v1/traces", headers=headers).status_code == 400
    assert served("0.0.0.0").get("/healthz", headers=headers).status_code == 200


def test_allowed_hosts_replaces_the_default(
    served: Callable[[str], TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERFDASH_ALLOWED_HOSTS", '["perf.example.org"]')
    client = served("0.0.0.0")
    assert client.get("/api/v1/traces", headers={"Host": "perf.example.org"}).status_code == 200
    assert client.get("/api/v1/traces", headers={"Host": "localhost"}).status_code == 400
    monkeypatch.setenv("PERFDASH_ALLOWED_HOSTS", '["*"]')
    assert served("0.0.0.0").get("/", headers={"Host": "any.example"}).status_code == 200

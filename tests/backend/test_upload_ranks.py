"""A multi-rank upload (`ranks=true`) is checked file by file before a byte is stored; the
name and project fields answer 422 past their columns; `/projects` lists what was filed.

The ranks expected come from the raw files themselves (`distributedInfo`, read with json).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.core.config import Settings
from backend.main import create_app
from tests.conftest import ENGINES, fresh_database, settings_on

DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"
RANK_FILES = sorted(DDP.glob("ddp_rank*.pt.trace.json.gz"))
NOT_A_TRACE = b"step,loss\n1,0.5\n"
Files = list[tuple[str, bytes]]


def _recorded_rank(data: bytes) -> int:
    rank: int = json.loads(gzip.decompress(data))["distributedInfo"]["rank"]
    return rank


def _with_rank(rank: int, world: int = 2) -> bytes:
    head = {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": world}}
    return json.dumps(head | {"traceEvents": []}).encode()


def _post(client: TestClient, files: Files, **fields: str) -> tuple[int, str]:
    parts = [("file", (name, data)) for name, data in files]
    response = client.post("/api/v1/traces", files=parts, data=fields)
    body = response.json()
    return response.status_code, str(body.get("detail", body))


def _stored(settings: Settings) -> list[Path]:
    return [p for p in settings.blob_dir.rglob("*") if p.is_file()]


@pytest.fixture(scope="module", params=ENGINES)
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, Settings]]:
    """One app and database per engine: the refusals store nothing, so each test checks the
    store and the table are as the accepting test (last in the module) left them."""
    folder = tmp_path_factory.mktemp("ranks")
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        fresh_database(request.param, folder) as database_url,
        settings_on(database_url, folder, monkeypatch) as settings,
        TestClient(create_app()) as client,
    ):
        yield client, settings


def _ddp() -> Files:
    return [(p.name, p.read_bytes()) for p in RANK_FILES]


@pytest.mark.parametrize(
    ("files", "named", "says"),
    [
        pytest.param(
            lambda d: [d[0], ("loss.csv", NOT_A_TRACE)],
            "loss.csv",
            "not a torch.profiler",
            id="a-csv",
        ),
        pytest.param(
            lambda d: [d[0], ("empty.json", b"")], "empty.json", "empty", id="an-empty-file"
        ),
        pytest.param(
            lambda d: [d[0], ("cut.json.gz", b"\x1f\x8b\x08\x00garbage")],
            "cut.json.gz",
            "gzip",
            id="corrupt-gzip",
        ),
        pytest.param(
            lambda d: [d[0], ("copy.json.gz", d[0][1] + b"")],
            "copy.json.gz",
            "rank 0 again",
            id="one-rank-twice",
        ),
        pytest.param(
            lambda d: [("a.json", _with_rank(0, 2)), ("b.json", _with_rank(1, 4))],
            "b.json",
            "world sizes",
            id="two-world-sizes",
        ),
    ],
)
def test_a_file_that_is_not_a_rank_is_refused_by_name_and_nothing_is_stored(
    world: tuple[TestClient, Settings], files: object, named: str, says: str
) -> None:
    client, settings = world
    assert callable(files)
    status, detail = _post(client, files(_ddp()), ranks="true")
    assert status == 422, detail
    assert named in detail and says in detail, detail
    assert _stored(settings) == []
    assert client.get("/api/v1/traces").json()["count"] == 0


@pytest.mark.parametrize(("field", "limit"), [("name", 512), ("project", 128)])
def test_name_and_project_past_their_columns_are_422_naming_the_field(
    world: tuple[TestClient, Settings], field: str, limit: int
) -> None:
    client, settings = world
    ok_length = "x" * limit  # accepted lengths are shown by the last test of the module
    status, detail = _post(client, _ddp(), ranks="true", **{field: ok_length + "y"})
    assert status == 422 and field in detail and str(limit) in detail, detail
    assert _stored(settings) == []


def test_the_ddp_pair_is_one_trace_with_project_and_name_listed_under_projects(
    world: tuple[TestClient, Settings],
) -> None:
    client, settings = world
    files = _ddp()
    assert sorted(_recorded_rank(data) for _, data in files) == [0, 1]
    status, body = _post(client, files, ranks="true", project="p" * 128, name="n" * 512)
    assert status == 202, body
    [trace] = client.get("/api/v1/traces").json()["items"]
    assert (trace["project"], trace["name"]) == ("p" * 128, "n" * 512)
    assert len(_stored(settings)) == 1
    single = [("solo.json", _with_rank(5, 8))]
    assert _post(client, single, ranks="true", project="other")[0] == 202
    projects = client.get("/api/v1/projects").json()
    assert projects["count"] == 2
    assert [(p["name"], p["traces"]) for p in projects["items"]] == [("other", 1), ("p" * 128, 1)]
    assert client.get("/api/v1/projects", params={"limit": 0}).status_code == 422

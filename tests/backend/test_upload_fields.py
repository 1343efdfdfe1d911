"""Upload fields are checked before a byte is stored, on SQLite and PostgreSQL.

PostgreSQL cannot store a NUL, and a name longer than its column fails the insert: both
used to answer a 422 about "a value out of range" after the blob was written, leaving it
on disk with no trace row. The multipart bodies are built by hand because an HTTP client
percent-escapes control characters in a file name, and the probe sent them raw.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from backend.core.config import Settings
from backend.main import create_app
from backend.services.traces.lifecycle import NAME_MAX_CHARS
from tests.conftest import ENGINES, fresh_database, settings_on

BOUNDARY = "perfdash-test-boundary"
TRACE = b'{"traceEvents": []}'


def _multipart(fields: dict[str, str], files: list[tuple[str, bytes]]) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts += [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/json\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, data in files
    ]
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def _post(client: TestClient, body: bytes) -> tuple[int, str]:
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    response = client.post("/api/v1/traces", content=body, headers=headers)
    return response.status_code, str(response.json().get("detail"))


def _stored(settings: Settings) -> list[str]:
    return [p.name for p in settings.blob_dir.rglob("*") if p.is_file()]


@pytest.fixture(scope="module", params=ENGINES)
def refusing(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, Settings]]:
    """One app and database per engine for the refusals: none of them may store anything,
    so each test checks the whole store and table are still empty."""
    folder = tmp_path_factory.mktemp("fields")
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        fresh_database(request.param, folder) as database_url,
        settings_on(database_url, folder, monkeypatch) as settings,
        TestClient(create_app()) as client,
    ):
        yield client, settings


@pytest.mark.parametrize(
    ("fields", "files", "field"),
    [
        ({"name": "a\x00b"}, [("t.json", TRACE)], "name"),
        ({"project": "p\x00"}, [("t.json", TRACE)], "project"),
        ({}, [("t\x00.json", TRACE)], "filename"),
        ({"name": "ok"}, [("t\x00.json", TRACE)], "filename"),
        ({}, [("r0.json", TRACE), ("r1\x00.json", TRACE + b" ")], "filename"),
        ({"name": "line\nbreak"}, [("t.json", TRACE)], "name"),
    ],
)
def test_a_control_character_is_refused_naming_the_field_and_nothing_is_stored(
    refusing: tuple[TestClient, Settings],
    fields: dict[str, str],
    files: list[tuple[str, bytes]],
    field: str,
) -> None:
    client, settings = refusing
    status, detail = _post(client, _multipart(fields, files))
    assert status == 422
    assert detail.startswith(f"{field}: ") and "control character" in detail, detail
    assert _stored(settings) == []
    assert client.get("/api/v1/traces").json()["count"] == 0


def test_a_long_file_name_becomes_a_name_cut_to_the_column(
    client: TestClient, settings: Settings
) -> None:
    filename = "k" * 600 + ".json"
    status, _ = _post(client, _multipart({}, [(filename, TRACE)]))
    assert status == 202
    [trace] = client.get("/api/v1/traces").json()["items"]
    assert trace["name"] == filename[:NAME_MAX_CHARS]
    assert len(_stored(settings)) == 1

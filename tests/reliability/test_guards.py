"""Bind safety of `perfdash serve`, the JSON body limit and the per-token rate limit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.api.deps import MAX_OFFSET
from backend.api.limits import MULTIPART_FRAMING_BYTES
from backend.core.bind import UnsafeBindError, check_bind
from backend.core.config import Settings
from backend.services.auth.rate_limit import token_buckets
from backend.services.auth.tokens import create_token
from tests.factories import native
from tests.reliability.conftest import free_port
from workers.cli.serve import build_app

DASH_CALLBACKS = "/_dash-update-component"


@pytest.mark.parametrize(
    ("host", "auth", "allow", "refused"),
    [
        ("127.0.0.1", "off", False, False),
        ("localhost", "off", False, False),
        ("::1", "off", False, False),
        ("127.0.0.2", "off", False, False),
        ("0.0.0.0", "off", False, True),
        ("::", "off", False, True),
        ("192.168.1.20", "off", False, True),
        ("perfdash.example.com", "off", False, True),
        ("0.0.0.0", "off", True, False),
        ("0.0.0.0", "proxy", False, False),
    ],
)
def test_bind_rules(host: str, auth: str, allow: bool, refused: bool) -> None:
    settings = Settings(auth=auth, allow_anonymous=allow)
    if refused:
        with pytest.raises(UnsafeBindError, match="PERFDASH_ALLOW_ANONYMOUS=true"):
            check_bind(host, settings)
    else:
        check_bind(host, settings)


def _serve(tmp_path: Path, port: int, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
         "--no-worker", "--no-samples"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PERFDASH_DATA_DIR": str(tmp_path / "var"), "PERFDASH_DATABASE_URL": "",
             "PERFDASH_BROKER_URL": "", **env},
    )  # fmt: skip


@pytest.fixture
def stop() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


@pytest.mark.integration
def test_serve_on_all_interfaces_with_auth_off_refuses_unless_allowed(
    tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    refused = _serve(tmp_path, free_port())
    stop.append(refused)
    out, _ = refused.communicate(timeout=60)
    assert refused.returncode == 2
    assert "refusing to serve on '0.0.0.0' with authentication off" in out
    assert not (tmp_path / "var" / "perfdash.db").exists(), "it stopped before touching the DB"

    port = free_port()
    allowed = _serve(tmp_path, port, PERFDASH_ALLOW_ANONYMOUS="true")
    stop.append(allowed)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        pytest.fail("serve with ALLOW_ANONYMOUS did not come up")
    os.killpg(allowed.pid, signal.SIGTERM)
    out, _ = allowed.communicate(timeout=30)
    assert "WARNING" in out and "authentication off (PERFDASH_ALLOW_ANONYMOUS=true)" in out


def test_json_bodies_over_the_limit_get_413_declared_or_streamed(
    client: TestClient, engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "max_json_bytes", 2048)
    with Session(engine) as session:
        plaintext, _ = create_token(session, "ci", ["metrics:write"])
    auth = {"Authorization": f"Bearer {plaintext}", "Content-Type": "application/json"}
    small = json.dumps(native()).encode()
    assert client.post("/api/v1/metrics", content=small, headers=auth).status_code == 200

    big = b'{"project": "' + b"x" * 4096 + b'"}'
    declared = client.post("/api/v1/metrics", content=big, headers=auth)
    assert declared.status_code == 413
    assert "larger than the 2048-byte limit (MAX_JSON_BYTES)" in declared.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the middleware must count
        yield from (big[i : i + 512] for i in range(0, len(big), 512))

    streamed = client.post("/api/v1/metrics", content=chunks(), headers=auth)
    assert streamed.status_code == 413
    trace = client.post("/api/v1/traces", files={"file": ("t.json", b"x" * 4096)})
    assert trace.status_code == 202, "multipart uploads have their own, larger limit"


def test_a_token_over_its_rate_gets_429_and_others_are_unaffected(
    client: TestClient, engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "token_rate_per_s", 0.01)
    monkeypatch.setattr(settings, "token_rate_burst", 3)
    token_buckets.cache_clear()
    with Session(engine) as session:
        noisy, _ = create_token(session, "noisy", ["metrics:write"])
        quiet, _ = create_token(session, "quiet", ["metrics:write"])
    try:
        codes = [
            client.post(
                "/api/v1/metrics",
                json=native(commit=f"c{i}"),
                headers={"Authorization": f"Bearer {noisy}"},
            ).status_code
            for i in range(5)
        ]
        assert codes == [200, 200, 200, 429, 429]
        limited = client.post(
            "/api/v1/metrics", json=native(), headers={"Authorization": f"Bearer {noisy}"}
        )
        assert int(limited.headers["Retry-After"]) >= 1
        assert "over its rate limit" in limited.json()["detail"]
        other = client.post(
            "/api/v1/metrics", json=native(), headers={"Authorization": f"Bearer {quiet}"}
        )
        assert other.status_code == 200
    finally:
        token_buckets.cache_clear()


@pytest.mark.parametrize("path", ["/api/v1/traces", "/api/v1/metrics/runs", "/api/v1/slas"])
def test_an_offset_past_the_bound_is_422_not_500(client: TestClient, path: str) -> None:
    """Found by schemathesis: offset=2**63 reached the database, which cannot bind it."""
    for offset in (2**63, MAX_OFFSET + 1):
        response = client.get(path, params={"offset": offset, "limit": 1})
        assert response.status_code == 422, response.text
        assert response.json()["detail"][0]["loc"] == ["query", "offset"]
    last = client.get(path, params={"offset": MAX_OFFSET, "limit": 1})
    assert last.status_code == 200 and last.json()["items"] == []


def test_the_schema_bounds_every_offset_and_limit(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paged = {
        (path, p["name"]): p["schema"]
        for path, item in schema["paths"].items()
        for op in item.values()
        for p in op.get("parameters", [])
        if p["name"] in ("offset", "limit") and p["in"] == "query"
    }
    assert len(paged) >= 10
    assert {k: s.get("maximum") is not None for k, s in paged.items()} == dict.fromkeys(paged, True)


def _post_asgi(
    app: Any,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    chunk: int = 64 * 1024,
    path: str = "/api/v1/traces",
) -> tuple[int, int]:
    """POST `body` to `path` straight through the ASGI app, a chunk per receive();
    return the status and how many body bytes the app pulled before answering."""
    pulled, status = 0, 0
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        if not pieces:
            return {"type": "http.disconnect"}
        piece = pieces.pop(0)
        pulled += len(piece)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start" and not status:
            status = message["status"]

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(),
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000), "headers": [(b"host", b"127.0.0.1:8000"), *headers],
    }  # fmt: skip
    # A thread of its own: Playwright's sync API keeps an event loop running on the main
    # thread while a session-scoped browser lives, and asyncio.run refuses to nest.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, app(scope, receive, send)).result()
    return status, pulled


def _multipart(size: int) -> tuple[bytes, bytes]:
    boundary = b"pdboundary"
    body = (
        b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="t.json"'
        b"\r\nContent-Type: application/octet-stream\r\n\r\n" + b"x" * size + b"\r\n--"
        + boundary + b"--\r\n"
    )  # fmt: skip
    return body, b"multipart/form-data; boundary=" + boundary


def test_an_upload_from_a_caller_who_may_not_upload_is_refused_before_its_body_is_read(
    client: TestClient, engine: Engine
) -> None:
    with Session(engine) as session:
        metrics_only, _ = create_token(session, "ci-metrics", ["metrics:write"])
        uploader, _ = create_token(session, "ci-traces", ["traces:write"])
    body, content_type = _multipart(1024 * 1024)
    for token, expected, reads_body in ((metrics_only, 403, False), (uploader, 202, True)):
        headers = [(b"content-type", content_type), (b"authorization", f"Bearer {token}".encode())]
        status, pulled = _post_asgi(client.app, headers, body)
        assert status == expected
        assert (pulled == len(body)) if reads_body else pulled == 0


def test_an_upload_body_past_the_upload_limit_is_cut_off_while_streaming(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "max_upload_bytes", 1024)
    body, content_type = _multipart(MULTIPART_FRAMING_BYTES + 8 * 1024 * 1024)
    status, pulled = _post_asgi(client.app, [(b"content-type", content_type)], body)
    assert status == 413
    assert pulled <= MULTIPART_FRAMING_BYTES + 1024 + 64 * 1024  # one chunk past the limit
    declared = client.post(
        "/api/v1/traces",
        content=body,
        headers={"content-type": content_type.decode(), "content-length": str(len(body))},
    )
    assert declared.status_code == 413
    assert "(MAX_UPLOAD_BYTES)" in declared.json()["detail"]


@pytest.fixture(scope="module")
def served_app() -> Any:
    """What `perfdash serve` runs: the API with the Dash pages mounted at `/`. One per
    module: Dash hands its page callbacks to the first app built in a process only, so
    this one may answer callbacks with errors; these tests count bytes, not answers."""
    return build_app("127.0.0.1", free_port())


def test_a_page_callback_body_past_the_json_limit_is_cut_off_while_streaming(
    client: TestClient, settings: Settings, served_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25: a viewer's 1 GiB POST to `/_dash-update-component` grew the process by
    3 GB, with AUTH=off (this test's mode) without signing in."""
    monkeypatch.setattr(settings, "max_json_bytes", 64 * 1024)
    value = "x" * (4 * 1024 * 1024)
    body = json.dumps({"output": "a.children", "inputs": [{"id": "a", "value": value}]}).encode()
    headers = [(b"content-type", b"application/json")]
    declared = [*headers, (b"content-length", str(len(body)).encode())]
    assert _post_asgi(served_app, declared, body, path=DASH_CALLBACKS) == (413, 0)
    # Werkzeug reads a body only as far as its Content-Length: without one, Dash reads
    # nothing; with a small one, no more than that, and under the limit it gets through.
    assert _post_asgi(served_app, headers, body, path=DASH_CALLBACKS)[1] <= 64 * 1024
    small = json.dumps({"output": "a.children", "inputs": []}).encode()
    declared = [*headers, (b"content-length", str(len(small)).encode())]
    status, pulled = _post_asgi(served_app, declared, small, path=DASH_CALLBACKS)
    assert status != 413 and pulled == len(small)


def test_a_page_upload_from_a_caller_who_may_not_upload_is_refused_before_its_body_is_read(
    client: TestClient, engine: Engine, served_app: Any
) -> None:
    """The pages take no files (the browser sends them to the API): a multipart body
    anywhere is an upload, refused before a byte is read from a caller who may not."""
    with Session(engine) as session:
        metrics_only, _ = create_token(session, "ci-metrics", ["metrics:write"])
    body, content_type = _multipart(1024 * 1024)
    auth = (b"authorization", f"Bearer {metrics_only}".encode())
    for path in (DASH_CALLBACKS, "/", "/traces"):
        headers = [(b"content-type", content_type), auth]
        assert _post_asgi(served_app, headers, body, path=path) == (403, 0), path

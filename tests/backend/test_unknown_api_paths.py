"""Paths under /api/ that no route serves answer JSON, even with the Dash pages mounted at /
(workers.cli.serve.build_app), which would otherwise answer their HTML with status 200."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from backend.core.config import Settings
from workers.cli.serve import build_app


@pytest.fixture
def served(settings: Settings) -> Iterator[TestClient]:
    with TestClient(build_app("127.0.0.1", 8000), base_url="http://127.0.0.1:8000") as client:
        yield client


UNKNOWN = [
    ("GET", "/api/v1/no-such-thing"),
    ("GET", "/api/v1/traces/abc/no-such-view"),
    ("GET", "/api/v2/traces"),
    ("GET", "/api"),
    ("GET", "/api/"),
    ("POST", "/api/v1/nothing/here"),
    ("DELETE", "/api/whatever"),
]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_unknown_api_paths_are_json_404s(served: TestClient) -> None:
    for method, path in UNKNOWN:  # one app for all: building it is the slow part
        response = served.request(method, path)
        assert response.status_code == 404, (method, path, response.text[:200])
        assert response.headers["content-type"].startswith("application/json")
        assert path in response.json()["detail"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_wrong_method_on_a_real_route_is_405_with_allow(served: TestClient) -> None:
    response = served.request("PATCH", "/api/v1/traces")
    assert response.status_code == 405
    assert response.headers["content-type"].startswith("application/json")
    assert "GET" in response.headers["allow"] and "POST" in response.headers["allow"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_real_routes_and_pages_still_answer(served: TestClient) -> None:
    assert served.get("/api/v1/traces").status_code == 200
    page = served.get("/traces")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]

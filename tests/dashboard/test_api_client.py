"""ApiClient's error handling; its calls against the real API run in tests/browser."""

from __future__ import annotations

import socket

import httpx
import pytest

from dashboard.api.client import ApiClient, ApiError, _detail
from dashboard.api.traces import list_traces


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("status", "body", "detail"),
    [
        (
            413,
            {"detail": "upload is larger than the 10-byte limit"},
            "upload is larger than the 10-byte limit",
        ),
        (422, {"detail": "the uploaded file is empty"}, "the uploaded file is empty"),
        (
            422,
            {"detail": [{"loc": ["query", "limit"], "msg": "too big"}, {"msg": "bad"}]},
            "too big; bad",
        ),
        (502, None, "502 Bad Gateway"),
    ],
)
def test_detail_is_the_apis_message(status: int, body: object, detail: str) -> None:
    response = httpx.Response(status, json=body) if body else httpx.Response(status, text="<html>")
    assert _detail(response) == detail


def test_unreachable_api_raises_api_error_without_status() -> None:
    client = ApiClient(f"http://127.0.0.1:{_closed_port()}", timeout_s=2)
    with pytest.raises(ApiError) as caught:
        list_traces(client)
    assert caught.value.status is None
    assert "cannot reach the API" in caught.value.detail


def test_base_url_trailing_slash_is_ignored() -> None:
    assert ApiClient("http://api:8000/").base_url == "http://api:8000"

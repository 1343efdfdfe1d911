"""Webhook targets and who sees them: refused addresses, redacted URLs, an admin-only log,
and the queue deliveries run on. Addresses are only classified here, never connected to.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.celery_config import celery_config
from backend.core.config import Settings, get_settings
from backend.core.task_names import DELIVER_WEBHOOK, INGEST_QUEUE, WEBHOOKS_QUEUE
from backend.services.auth.tokens import create_token
from backend.services.slas.webhook_targets import refusal

# (address, refused by default, refused with WEBHOOK_ALLOW_PRIVATE)
ADDRESSES = [
    ("127.0.0.1", True, False),
    ("127.8.9.10", True, False),
    ("::1", True, False),
    ("10.1.2.3", True, False),
    ("172.16.0.1", True, False),
    ("192.168.1.1", True, False),
    ("100.64.0.1", True, False),  # carrier-grade NAT
    ("fc00::1", True, False),
    ("::ffff:127.0.0.1", True, False),  # IPv4-mapped loopback
    ("64:ff9b::7f00:1", True, False),  # NAT64 of loopback
    ("2002:7f00:1::1", True, False),  # 6to4 of loopback
    ("169.254.169.254", True, True),  # the cloud metadata service
    ("fe80::1", True, True),
    ("0.0.0.0", True, True),
    ("224.0.0.1", True, True),
    ("240.0.0.1", True, True),
    ("8.8.8.8", False, False),
    ("2606:4700:4700::1111", False, False),
]


@pytest.mark.parametrize(("address", "by_default", "when_allowed"), ADDRESSES)
def test_which_addresses_a_webhook_may_reach(
    address: str, by_default: bool, when_allowed: bool
) -> None:
    assert (refusal(address, allow_private=False) is not None) == by_default
    assert (refusal(address, allow_private=True) is not None) == when_allowed


def _token(engine: Engine, *scopes: str) -> dict[str, str]:
    with Session(engine) as session:
        plaintext, _ = create_token(session, "t", list(scopes))
    return {"Authorization": f"Bearer {plaintext}"}


def _allow_private(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PERFDASH_WEBHOOK_ALLOW_PRIVATE", value)
    get_settings.cache_clear()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://[::1]:9/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5:8080/hook",
    ],
)
def test_registering_a_non_public_target_is_refused_by_default(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    admin = _token(engine, "webhooks:write")
    refused = client.post("/api/v1/webhooks", json={"name": "h", "url": url}, headers=admin)
    assert refused.status_code == 422 and "webhook target refused" in refused.json()["detail"]
    _allow_private(monkeypatch, "true")
    made = client.post("/api/v1/webhooks", json={"name": "h", "url": url}, headers=admin)
    assert made.status_code == (422 if "169.254" in url else 201), made.text


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://example.test/hook", "http:// or https://"),
        ("http:///hook", "with a host"),
        ("http://[::1/hook", "malformed"),
        ("http://h.test:99999/", "malformed"),
        ("http://a..b/hook", "host name is not valid"),
        ("http://" + "a" * 70 + ".invalid/", "host name is not valid"),  # IDNA, no lookup
        ("http://no-such-host.test/hook", "does not resolve"),
        ("http://2130706433/hook", "resolves to 127.0.0.1"),
        ("http://0x7f.1/hook", "resolves to 127.0.0.1"),
    ],
)
def test_bad_webhook_urls_get_a_located_422(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, url: str, says: str
) -> None:
    real = socket.getaddrinfo

    def no_dns(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".test"):  # never asks a DNS server
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    admin = _token(engine, "webhooks:write")
    refused = client.post("/api/v1/webhooks", json={"name": "h", "url": url}, headers=admin)
    assert refused.status_code == 422 and says in refused.json()["detail"], refused.text


def test_webhook_urls_and_the_delivery_log_are_for_webhook_admins_only(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _allow_private(monkeypatch, "true")
    secret_url = "http://127.0.0.1:9/services/T000/B000/sl4ck-t0ken"
    admin = _token(engine, "webhooks:write")
    made = client.post(
        "/api/v1/webhooks", json={"name": "s", "url": secret_url, "kind": "slack"}, headers=admin
    )
    assert made.status_code == 201 and made.json()["url"] == secret_url
    hook_id = made.json()["id"]
    callers: dict[str, dict[str, str]] = {
        "anonymous": {},
        "metrics:write": _token(engine, "metrics:write"),
        "webhooks:write": admin,
        "admin": _token(engine, "admin"),
    }
    seen: dict[str, Any] = {}
    for name, headers in callers.items():
        listed = client.get("/api/v1/webhooks", headers=headers)
        log = client.get(f"/api/v1/webhooks/{hook_id}/deliveries", headers=headers)
        seen[name] = (listed.json()[0]["url"], log.status_code)
    redacted = "http://127.0.0.1:9/..."
    assert seen == {
        "anonymous": (redacted, 401),
        "metrics:write": (redacted, 403),
        "webhooks:write": (secret_url, 200),
        "admin": (secret_url, 200),
    }


def test_deliveries_are_routed_to_the_webhooks_queue_never_ingest(settings: Settings) -> None:
    routes = celery_config(settings)["task_routes"]
    assert routes[DELIVER_WEBHOOK] == {"queue": WEBHOOKS_QUEUE} != {"queue": INGEST_QUEUE}


def test_the_embedded_worker_of_perfdash_serve_consumes_the_webhooks_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workers.cli import main as cli

    started: list[list[str]] = []
    monkeypatch.setattr("workers.cli.main.subprocess.Popen", started.append)
    cli._spawn_worker()
    [cmd] = started
    queues = cmd[cmd.index("--queues") + 1].split(",")
    assert WEBHOOKS_QUEUE in queues and INGEST_QUEUE in queues

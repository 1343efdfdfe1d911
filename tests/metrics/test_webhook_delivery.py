"""One webhook delivery attempt, on both databases, against receivers on 127.0.0.1 only.

- A receiver that drips its answer one byte at a time is cut at the total deadline.
- The address is checked at send time (a name that now resolves to loopback is refused)
  and the sender connects to the address it checked, not to a second resolution.
- A failed attempt writes the next attempt's outbox message, which is sent with its backoff.

Name resolution is replaced for made-up `.test` names only; no test connects anywhere but
127.0.0.1, and the public address below is only ever resolved, never connected to.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from backend.core.config import Settings, get_settings
from backend.models.outbox import OutboxMessage
from backend.models.webhooks import DeliveryStatus, Webhook, WebhookDelivery
from backend.services.slas.alerts import deliver
from tests.metrics.helpers import serving

PUBLIC = "93.184.216.34"  # resolved to in a test, never connected to
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class DripServer(threading.Thread):
    """Accepts one connection on 127.0.0.1, reads the request, then sends ANSWER one byte
    every `interval_s`. It stops by itself: after the whole answer, when the client has
    gone (a send fails), or when nobody connected within `accept_s`."""

    def __init__(self, interval_s: float, accept_s: float = 30.0) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(accept_s)
        self.interval_s = interval_s
        self.sent = 0
        self.cut = False
        self._stop_event = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"

    def run(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except TimeoutError:
            return
        finally:
            self.listener.close()
        with conn:
            conn.recv(65536)
            for byte in ANSWER:
                if self._stop_event.wait(self.interval_s):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    self.cut = True
                    return
                self.sent += 1

    def stop(self) -> None:
        self._stop_event.set()


class Receiver(ThreadingHTTPServer):
    """Answers 200 and records the Host header of every request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hosts: list[str] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.hosts.append(self.headers["Host"])
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with serving(Receiver()) as server:
        yield server


def _env(monkeypatch: pytest.MonkeyPatch, **values: str) -> Settings:
    for key, value in values.items():
        monkeypatch.setenv(f"PERFDASH_{key.upper()}", value)
    get_settings.cache_clear()
    return get_settings()


def _delivery(engine: Engine, url: str) -> int:
    with Session(engine) as session:
        hook = Webhook(name="h", url=url)
        session.add(hook)
        session.flush()
        assert hook.id is not None
        row = WebhookDelivery(webhook_id=hook.id, event="sla_failed", payload={"x": 1})
        session.add(row)
        session.commit()
        assert row.id is not None
        return row.id


def _get(engine: Engine, delivery_id: int) -> WebhookDelivery:
    with Session(engine) as session:
        row = session.get(WebhookDelivery, delivery_id)
        assert row is not None
        return row


def _resolve(monkeypatch: pytest.MonkeyPatch, name: str, answers: list[str]) -> list[str]:
    """Make `name` resolve to the next of `answers` at each lookup; returns the lookups."""
    real, asked = socket.getaddrinfo, []

    def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != name:
            return real(host, port, *args, **kwargs)
        asked.append(host)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "no more answers in this test")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers.pop(0), port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return asked


def test_a_receiver_that_drips_its_answer_is_cut_at_the_total_deadline(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _env(monkeypatch, webhook_allow_private="true", webhook_timeout_s="1")
    # Each byte comes well within any per-read timeout; the whole answer takes ~15 s.
    server = DripServer(interval_s=0.25)
    server.start()
    delivery_id = _delivery(engine, server.url)
    try:
        status = deliver(engine, delivery_id, 1, settings=settings)
        server.join(timeout=30)
    finally:
        server.stop()
    row = _get(engine, delivery_id)
    assert status == DeliveryStatus.PENDING and row.attempts == 1
    assert row.error is not None and "deadline" in row.error, row.error
    assert server.cut and 0 < server.sent < len(ANSWER), (server.sent, server.cut)


def test_a_failed_attempt_schedules_the_next_with_backoff_and_a_duplicate_does_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _env(monkeypatch, webhook_allow_private="true")
    with socket.create_server(("127.0.0.1", 0)) as closed:
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
    delivery_id = _delivery(engine, url)  # nothing listens there any more: refused
    assert deliver(engine, delivery_id, 1, settings=settings) == DeliveryStatus.PENDING
    assert deliver(engine, delivery_id, 1, settings=settings) is None, "attempt 1 was made"
    row = _get(engine, delivery_id)
    assert row.attempts == 1 and row.error is not None and "Connection" in row.error
    queued = list((settings.broker_dir / "queue").glob("*.webhooks.msg"))
    assert len(queued) == 1, "the next attempt was sent to the webhooks queue"
    with Session(engine) as session:
        assert session.exec(select(OutboxMessage)).all() == []


def test_the_last_attempt_fails_the_delivery_and_schedules_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.services.slas.alerts import MAX_ATTEMPTS

    settings = _env(monkeypatch, webhook_allow_private="true")
    with socket.create_server(("127.0.0.1", 0)) as closed:
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
    delivery_id = _delivery(engine, url)
    with Session(engine) as session:
        row = session.get(WebhookDelivery, delivery_id)
        assert row is not None
        row.attempts = MAX_ATTEMPTS - 1
        session.add(row)
        session.commit()
    assert deliver(engine, delivery_id, MAX_ATTEMPTS, settings=settings) == DeliveryStatus.FAILED
    assert list((settings.broker_dir / "queue").glob("*.msg")) == []


def test_a_name_that_resolves_to_loopback_at_send_time_is_refused_without_connecting(
    engine: Engine, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _env(monkeypatch, webhook_allow_private="false")
    # Public when the webhook was registered, loopback now: DNS rebinding.
    asked = _resolve(monkeypatch, "rebind.test", ["127.0.0.1"])
    delivery_id = _delivery(engine, f"http://rebind.test:{receiver.port}/hook")
    assert deliver(engine, delivery_id, 1, settings=settings) == DeliveryStatus.FAILED
    row = _get(engine, delivery_id)
    assert row.error is not None and "rebind.test resolves to 127.0.0.1" in row.error
    assert asked == ["rebind.test"] and receiver.hosts == []
    with Session(engine) as session:
        assert session.exec(select(OutboxMessage)).all() == [], "a refusal is not retried"


def test_the_sender_connects_to_the_address_it_checked(
    engine: Engine, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _env(monkeypatch, webhook_allow_private="true")
    # One answer only: a second lookup (to connect) would fail, or could be rebound.
    asked = _resolve(monkeypatch, "receiver.test", ["127.0.0.1"])
    delivery_id = _delivery(engine, f"http://receiver.test:{receiver.port}/hook")
    assert deliver(engine, delivery_id, 1, settings=settings) == DeliveryStatus.DELIVERED
    assert asked == ["receiver.test"]
    assert receiver.hosts == [f"receiver.test:{receiver.port}"]
    assert _get(engine, delivery_id).response_code == 200


def test_a_name_public_at_registration_is_accepted_then_checked_again(
    client: Any, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.services.auth.tokens import create_token

    _env(monkeypatch, webhook_allow_private="false")
    _resolve(monkeypatch, "hooks.test", [PUBLIC, "127.0.0.1"])
    with Session(engine) as session:
        token, _ = create_token(session, "t", ["webhooks:write"])
    hook = {"name": "h", "url": "http://hooks.test/hook"}
    made = client.post("/api/v1/webhooks", json=hook, headers={"Authorization": f"Bearer {token}"})
    assert made.status_code == 201, made.text
    with Session(engine) as session:
        webhook = session.exec(select(Webhook)).one()
        assert webhook.id is not None
        row = WebhookDelivery(webhook_id=webhook.id, event="sla_failed", payload={})
        session.add(row)
        session.commit()
        assert row.id is not None
        delivery_id = row.id
    assert deliver(engine, delivery_id, 1, settings=get_settings()) == DeliveryStatus.FAILED
    assert "a loopback address" in (_get(engine, delivery_id).error or "")

"""The outbox, on both databases: side effects written with their state change survive a
broker outage, and the sweeper sends them once the broker is back.

The broker outage is the one of `test_faults.py`: a Redis URL on a loopback port where
nothing listens. "Back" is the `settings` fixture's filesystem broker, whose messages are
files these tests read (queue, task, arguments).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from backend.core.config import Settings
from backend.core.task_names import DELIVER_WEBHOOK, RUN_BENCHMARK, WEBHOOKS_QUEUE
from backend.models.outbox import OutboxMessage
from backend.models.webhooks import WebhookDelivery
from backend.services.outbox.messages import sweep_outbox
from tests.factories import post_metrics, post_sla, token_headers
from tests.reliability.conftest import dead_broker_url

GEMM: dict[str, Any] = {"name": "gemm-bf16", "workload": "gemm", "sweep": {"m": [256]}}


def _queued(settings: Settings) -> list[tuple[str, str, list[str], dict[str, Any]]]:
    """(queue, task, args, headers) of every message in the filesystem broker."""
    found = []
    for path in sorted((settings.broker_dir / "queue").glob("*.msg")):
        message = json.loads(path.read_text())
        args = json.loads(base64.b64decode(message["body"]))[0]
        queue = message["properties"]["delivery_info"]["routing_key"]
        found.append((queue, message["headers"]["task"], args, message["headers"]))
    return found


def _outbox(engine: Engine) -> list[OutboxMessage]:
    with Session(engine) as session:
        return list(session.exec(select(OutboxMessage)).all())


def _later(settings: Settings) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=settings.outbox_resend_after_s + 1)


def test_a_run_requested_while_the_broker_is_down_is_accepted_and_sent_by_the_sweeper(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    use_broker: Callable[[str], Settings],
) -> None:
    assert client.post("/api/v1/benchmarks", json=GEMM).status_code == 200
    use_broker(dead_broker_url())
    response = client.post("/api/v1/benchmarks/gemm-bf16/runs")
    assert response.status_code == 202, response.text
    run = response.json()
    assert run["status"] == "queued"
    [message] = _outbox(engine)
    assert (message.task, message.args, message.queue) == (RUN_BENCHMARK, [run["id"]], "gpu")

    back = use_broker("")  # the filesystem broker of `settings`
    assert _queued(back) == []
    assert sweep_outbox(engine=engine, settings=back).sent == [], "not due yet: its writer's"
    swept = sweep_outbox(engine=engine, settings=back, now=_later(back))
    assert swept.sent == [message.id] and swept.unsent == []
    [(queue, task, args, headers)] = _queued(back)
    assert (queue, task, args) == ("gpu", RUN_BENCHMARK, [run["id"]])
    assert headers["timelimit"] == [1800 + 120, 1800 + 60], "the spec's limits travel along"
    assert _outbox(engine) == []
    assert sweep_outbox(engine=engine, settings=back, now=_later(back)).sent == []
    assert client.get(f"/api/v1/benchmark-runs/{run['id']}").json()["status"] == "queued"


def test_with_the_broker_up_a_run_is_sent_at_once_and_leaves_no_outbox_row(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    assert client.post("/api/v1/benchmarks", json=GEMM).status_code == 200
    run = client.post("/api/v1/benchmarks/gemm-bf16/runs").json()
    assert [(q, t, a) for q, t, a, _ in _queued(settings)] == [("gpu", RUN_BENCHMARK, [run["id"]])]
    assert _outbox(engine) == []


def test_a_sweep_that_meets_the_broker_still_down_keeps_the_message_and_backs_off(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    use_broker: Callable[[str], Settings],
) -> None:
    assert client.post("/api/v1/benchmarks", json=GEMM).status_code == 200
    use_broker(dead_broker_url())
    assert client.post("/api/v1/benchmarks/gemm-bf16/runs").status_code == 202
    down = use_broker(dead_broker_url())
    first = sweep_outbox(engine=engine, settings=down, now=_later(down))
    assert first.sent == [] and len(first.unsent) == 1
    assert sweep_outbox(engine=engine, settings=down, now=_later(down)).unsent == [], "leased"
    [message] = _outbox(engine)
    assert message.attempts == 1


def test_alerts_raised_while_the_broker_is_down_are_sent_on_the_webhooks_queue_later(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    use_broker: Callable[[str], Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERFDASH_WEBHOOK_ALLOW_PRIVATE", "true")  # the receiver is on loopback
    use_broker("")
    auth = token_headers(engine, "metrics:write", "slas:write", "webhooks:write", name="t")
    hook = {"name": "h", "url": "http://127.0.0.1:9/hook"}
    assert client.post("/api/v1/webhooks", json=hook, headers=auth).status_code == 201
    post_sla(client, auth, name="step", threshold=11.5)
    for commit, value in (("a", 11.0), ("b", 12.0)):  # pass, then fail: one alert
        if commit == "b":
            use_broker(dead_broker_url())
        post_metrics(
            client, auth, commit=commit, points=[{"metric": "step_time_ms", "value": value}]
        )

    with Session(engine) as session:
        [delivery] = session.exec(select(WebhookDelivery)).all()
    assert delivery.status == "pending" and delivery.attempts == 0
    [message] = _outbox(engine)
    assert (message.task, message.args) == (DELIVER_WEBHOOK, [str(delivery.id), "1"])
    back = use_broker("")
    assert sweep_outbox(engine=engine, settings=back, now=_later(back)).sent == [message.id]
    assert [(q, t, a) for q, t, a, _ in _queued(back)] == [
        (WEBHOOKS_QUEUE, DELIVER_WEBHOOK, [str(delivery.id), "1"])
    ]

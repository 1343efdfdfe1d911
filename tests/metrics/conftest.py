"""Fixtures for the metrics/SLA tests: a real API token on the per-test database."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.services.auth.tokens import create_token


@pytest.fixture
def token(engine: Engine) -> str:
    """A token with every write scope, created the way `perfdash token create` does."""
    with Session(engine) as session:
        plaintext, _ = create_token(
            session, "tests", ["metrics:write", "slas:write", "webhooks:write"]
        )
    return plaintext


@pytest.fixture
def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}

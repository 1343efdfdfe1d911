"""schemathesis against the app's own OpenAPI schema, in process: no request may get a 5xx.

Every operation is called with generated valid and invalid inputs (paths, queries, bodies),
with an admin API token so the token-guarded routes are exercised past their auth check.
The database is SQLite (the PostgreSQL variant would create a database per operation; the
routes share their SQL). `PERFDASH_FUZZ_EXAMPLES` raises the cases per operation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from sqlmodel import Session

from backend.core.config import Settings
from backend.core.db import get_engine
from backend.main import create_app
from backend.services.auth.tokens import create_token

EXAMPLES = int(os.environ.get("PERFDASH_FUZZ_EXAMPLES", "15"))


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """SQLite only here (overrides the two-engine fixture of tests/conftest.py)."""
    yield f"sqlite:///{tmp_path / 'perfdash.db'}"


@pytest.fixture
def admin_headers(settings: Settings) -> dict[str, str]:
    with Session(get_engine()) as session:
        plaintext, _ = create_token(session, "fuzz", ["admin"])
    return {"Authorization": f"Bearer {plaintext}"}


def test_no_operation_answers_5xx(admin_headers: dict[str, str]) -> None:
    # schemathesis' own pytest plugin breaks on this pytest, so each operation's strategy
    # drives a hypothesis test built here.
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) > 20

    failures: list[str] = []
    calls = [0]
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case: schemathesis.Case[Any]) -> None:
            calls[0] += 1
            case.call_and_validate(headers=admin_headers, checks=[not_a_server_error])

        try:
            call()
        except Exception as e:  # gather every operation's 5xx, then fail once with all
            failures.append(f"{operation.label}: {type(e).__name__}: {str(e)[:300]}")
    print(f"schemathesis: {len(operations)} operations, {calls[0]} requests")  # -s: for the docs
    assert not failures, "\n".join(failures)

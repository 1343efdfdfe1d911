"""The hostile-but-well-formed corner of the parser fuzz corpus, stored through the real
ingest path on SQLite and PostgreSQL (issue 25, item 5).

Each case is valid JSON or a valid sqlite export with one value an attacker controls:
a kernel name over PostgreSQL's btree row limit (~2.7 KB), NUL characters (PostgreSQL text
cannot hold them), `ts: 1e300`, nsys rows at the ends of int64, and a 40 MB name. Every one
must end `ready` (stored safely) or `failed` with a message that says what and where; never
the worker's "internal error". The inputs are built here, small on disk (gzip of repeats).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.models import Trace
from backend.services.loading.pipeline import ingest_trace
from tests.factories import stored_events
from tests.ingest.nsys_files import NSYS, copy_of, edit


def _kineto(*events: dict[str, Any]) -> bytes:
    """A gzipped torch.profiler trace with one ordinary kernel plus `events`."""
    plain = {
        "ph": "X", "cat": "kernel", "name": "plain_kernel", "pid": 0, "tid": 7, "ts": 10,
        "dur": 3, "args": {"device": 0, "stream": 7, "correlation": 1},
    }  # fmt: skip
    doc = {"schemaVersion": 1, "traceEvents": [plain, *events]}
    return gzip.compress(json.dumps(doc).encode(), compresslevel=6)


def _kernel(name: str, ts: object = 20, **args: Any) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": 2,
        "args": {"device": 0, "stream": 7, "correlation": 2, **args},
    }  # fmt: skip


def _nsys(tmp_path: Path, *statements: str) -> bytes:
    return edit(copy_of(NSYS / "copies.sqlite", tmp_path), *statements).read_bytes()


KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
# ~8 KB and incompressible: PostgreSQL compresses a repetitive index row below its limit
LONG_NAME = "void k<" + "".join(sha256(str(i).encode()).hexdigest() for i in range(128)) + ">"
HUGE_NAME = "k" * (40 << 20)


def _nul_names(_: Path) -> tuple[str, bytes]:
    op = {"ph": "X", "cat": "cpu_op", "name": "op\x00", "pid": 1, "tid": 1, "ts": 5, "dur": 9}
    return "t.json.gz", _kineto(_kernel("a\x00b", **{"Input type": "x\x00"}), op)


def _int64_ends(table: str) -> Callable[[Path], tuple[str, bytes]]:
    def build(tmp_path: Path) -> tuple[str, bytes]:
        first_row = f"(SELECT min(rowid) FROM {table})"
        return "t.sqlite", _nsys(
            tmp_path,
            f"UPDATE {table} SET start = -9223372036854775808, "
            f"end = 9223372036854775807 WHERE rowid = {first_row}",
        )

    return build


# (id, builder(tmp_path) -> (file name, bytes), what the failure message must say, or None
# when the trace must be stored). Every message ends with the event's place: "(event N)".
Case = tuple[str, Callable[[Path], tuple[str, bytes]], str | None]
CASES: list[Case] = [
    ("long kernel name", lambda _: ("t.json.gz", _kineto(_kernel(LONG_NAME))), None),
    ("NUL in names", _nul_names, None),
    (
        "ts 1e300",
        lambda _: ("t.json.gz", _kineto(_kernel("far", ts=1e300))),
        "kernel event ('far') starts at 1.000e+303 ns, outside",
    ),
    (
        "40 MB name",
        lambda _: ("t.json.gz", _kineto(_kernel(HUGE_NAME))),
        "kernel name is 41943040 characters long, over the 65536-character limit",
    ),
    (
        "cpu_op ts 1e300",
        lambda _: ("t.json.gz", _kineto({**_kernel("op", ts=1e300), "cat": "cpu_op"})),
        # the start is the value out of range (the per-event check used to name the end)
        "cpu_op event ('op') starts at 1.000e+303 ns, outside",
    ),
    (
        "nsys kernel at +-2^63",
        _int64_ends(KERNEL_TABLE),
        "starts at -9223372036854775808 ns, outside",
    ),
    (
        "nsys runtime call at +-2^63",  # runtime calls come as columns (EventBlock)
        _int64_ends("CUPTI_ACTIVITY_KIND_RUNTIME"),
        "runtime event ('cuModuleGetLoadingMode') starts at -9223372036854775808 ns, outside",
    ),
]


@pytest.mark.parametrize(("build", "located"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_trace_is_stored_or_fails_with_a_located_error(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    tmp_path: Path,
    build: Callable[[Path], tuple[str, bytes]],
    located: str | None,
) -> None:
    name, data = build(tmp_path)
    response = client.post("/api/v1/traces", files={"file": (name, data)})
    assert response.status_code == 202, response.text
    trace_id = response.json()["id"]
    status = ingest_trace(engine=engine, settings=settings, trace_id=trace_id)
    with engine.connect() as conn:
        error = conn.execute(select(Trace.error).where(Trace.id == trace_id)).scalar_one()  # type: ignore[call-overload]
    names = [(e["name"],) for e in stored_events(engine, trace_id)]
    if located is None:
        assert status == "ready", error
        assert not any("\x00" in n for (n,) in names)
    else:
        assert status == "failed"
        assert error is not None and "internal error" not in error
        assert located in error and error.endswith(")"), error
        assert "(event " in error, error

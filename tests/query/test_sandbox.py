"""Every way out of the sandbox the issue lists is refused with a clear 4xx, and the
server still answers afterwards (issue #18, *Sandbox*)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.main import create_app
from backend.services.query import run
from tests.factories import token_headers
from tests.query.conftest import World

TRACE = "h200_train_step"


def _healthy(world: World) -> None:
    assert world.client.get("/healthz").status_code == 200
    body = world.query(TRACE, "SELECT count(*) AS n FROM events")
    assert body["rows"][0][0] > 0


def _refused(world: World, sql: str, *words: str) -> str:
    detail: str = world.query(TRACE, sql, status=422)["detail"]
    for word in words:
        assert word in detail, detail
    _healthy(world)
    return detail


FILES = "no files or URLs"
READS = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/passwd')",
    "SELECT * FROM read_json('/etc/passwd')",
    "SELECT * FROM read_parquet('s3://bucket/events.parquet')",
    "SELECT * FROM read_parquet('https://example.com/events.parquet')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM parquet_metadata('/etc/passwd')",
    "SELECT * FROM '/etc/passwd.csv'",
    "SELECT * FROM '/var/lib/x.parquet'",
]


@pytest.mark.parametrize("sql", READS)
def test_reading_files_or_urls_is_refused(world: World, sql: str) -> None:
    _refused(world, sql, FILES)


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("COPY events TO '{out}/events.csv'", "COPY"),
        ("COPY (SELECT * FROM events) TO '{out}/events.parquet' (FORMAT parquet)", "COPY"),
        ("ATTACH '{out}/other.db' AS other", "ATTACH"),
        ("DETACH other", "DETACH"),
        ("INSTALL httpfs", "LOAD"),
        ("LOAD httpfs", "LOAD"),
        ("EXPORT DATABASE '{out}/export'", "EXPORT"),
        ("SET threads = 64", "SET"),
        ("SET enable_external_access = true", "SET"),
        ("RESET memory_limit", "SET"),
        ("PRAGMA disable_checkpoint_on_shutdown", "PRAGMA"),
        ("CREATE TABLE t AS SELECT * FROM events", "CREATE"),
        ("CREATE OR REPLACE VIEW kernels AS SELECT 1", "CREATE"),
        ("INSERT INTO events VALUES (1)", "INSERT"),
        ("UPDATE events SET name = 'x'", "UPDATE"),
        ("DELETE FROM events", "DELETE"),
        ("DROP VIEW events", "DROP"),
        ("ALTER VIEW events RENAME TO e", "ALTER"),
        ("CALL pragma_version()", "CALL"),
        ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN"),
        ("CHECKPOINT", ""),
        ("USE memory", ""),
    ],
)
def test_statements_other_than_select_are_refused_by_name(
    world: World, tmp_path: Path, sql: str, kind: str
) -> None:
    detail = _refused(world, sql.format(out=tmp_path), "only SELECT is allowed")
    assert f"a {kind}" in detail
    assert list(tmp_path.iterdir()) == []  # nothing was written


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1; SELECT 2", "SELECT 1; COPY events TO '/tmp/x.csv'", "SELECT 1;\nDROP VIEW events"],
)
def test_several_statements_are_refused(world: World, sql: str) -> None:
    _refused(world, sql, "exactly one SELECT", "not 2")


def _dataset_file(world: World, trace: str, name: str = "events.parquet") -> Path:
    with get_engine().connect() as conn:
        dataset = conn.execute(
            text("SELECT dataset FROM traces WHERE id = :t"), {"t": world.traces[trace]}
        ).scalar()
    path = get_settings().blob_dir / "datasets" / world.traces[trace] / str(dataset) / name
    assert path.exists()
    return path


def test_another_traces_data_is_out_of_reach(world: World) -> None:
    other = _dataset_file(world, "nsys_nccl_2gpu")
    for sql in [
        f"SELECT count(*) FROM read_parquet('{other}')",
        f"SELECT count(*) FROM '{other}'",
        f"SELECT count(*) FROM read_parquet('{other.parent.parent.parent}/*/*/events.parquet')",
        f"SELECT count(*) FROM read_parquet('{_dataset_file(world, TRACE)}/../../../"
        f"{other.parent.parent.name}/{other.parent.name}/events.parquet')",
        f"SELECT count(*) FROM read_parquet('{_dataset_file(world, TRACE, 'blocks.parquet')}')",
    ]:
        _refused(world, sql, FILES)


def test_a_query_sees_only_its_own_trace(world: World) -> None:
    """The same query on two traces counts each one's own events, and the catalog holds
    nothing but the documented views over the one file."""
    counts = {
        t: world.query(t, "SELECT count(*) FROM events")["rows"][0][0]
        for t in (TRACE, "nsys_nccl_2gpu")
    }
    assert counts[TRACE] != counts["nsys_nccl_2gpu"]
    names = world.query(
        TRACE,
        "SELECT table_name FROM duckdb_tables() UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE NOT internal",
    )["rows"]
    assert sorted(r[0] for r in names) == sorted(
        ["_dataset", "args", "copies", "counters", "events", "flows", "kernels"]
    )


def test_python_variables_cannot_be_scanned(world: World) -> None:
    _refused(world, "SELECT * FROM world", "does not exist")
    _refused(world, "SELECT * FROM _slots", "does not exist")


def test_a_runaway_cross_join_is_stopped(world: World, setting: Any) -> None:
    setting(query_timeout_s="0.5")
    detail = world.query(
        "h200_gpt_12l", "SELECT count(*) FROM events a, events b, events c", status=422
    )["detail"]
    assert "QUERY_TIMEOUT_S" in detail and "stopped" in detail
    _healthy(world)


def test_a_query_past_the_memory_limit_fails(world: World, setting: Any) -> None:
    setting(query_memory_limit="20MB")
    sql = (
        "SELECT count(DISTINCT a.id * 1000000 + b.id) FROM (SELECT id FROM events LIMIT 3000) a, "
        "(SELECT id FROM events LIMIT 3000) b"
    )
    assert "QUERY_MEMORY_LIMIT" in world.query("h200_gpt_12l", sql, status=422)["detail"]
    _healthy(world)


def test_queries_past_the_concurrency_cap_get_429(world: World, setting: Any) -> None:
    setting(query_concurrency="1")
    slot = run._slots(1)
    assert slot.acquire(blocking=False)  # a query holding the only slot
    try:
        response = world.client.post(
            f"/api/v1/traces/{world.traces[TRACE]}/query", json={"sql": "SELECT 1"}
        )
        assert response.status_code == 429, response.text
        assert "QUERY_CONCURRENCY" in response.json()["detail"]
        assert response.headers["Retry-After"] == "1"
    finally:
        slot.release()
    assert world.query(TRACE, "SELECT 1")["rows"] == [[1]]


def test_reads_need_the_same_permission_as_other_trace_reads(world: World, setting: Any) -> None:
    setting(auth="password")
    trace = world.traces[TRACE]
    with TestClient(create_app(), base_url="https://testserver") as client:
        body: dict[str, Any] = {"sql": "SELECT count(*) FROM kernels"}
        for url, call in [
            (f"/api/v1/traces/{trace}/query", lambda u, h: client.post(u, json=body, headers=h)),
            (f"/api/v1/traces/{trace}/query/schema", lambda u, h: client.get(u, headers=h)),
            (f"/api/v1/traces/{trace}/kernels", lambda u, h: client.get(u, headers=h)),
        ]:
            assert call(url, {}).status_code == 401
            assert call(url, token_headers(get_engine(), "metrics:write")).status_code == 200


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT '\x00'",
        "SELECT " + "(" * 3000 + "1" + ")" * 3000,
        "SELECT 1 IN (" + ", ".join(str(i) for i in range(20_000)) + ")",
        "SELECT 'é€😀' AS ✓",
        "SELECT * FROM range(1000000000000)",
        "SELECT setseed(0.5)",
        "SELECT * FROM duckdb_settings() WHERE name = 'enable_external_access'",
    ],
)
def test_hostile_selects_get_an_answer_not_a_crash(world: World, sql: str) -> None:
    response = world.client.post(
        f"/api/v1/traces/{world.traces[TRACE]}/query", json={"sql": sql, "limit": 10}
    )
    assert response.status_code in (200, 422), response.text
    _healthy(world)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT length(repeat('x', 2000000000))",
        "SELECT repeat('x', 2000000000)",
        "SELECT length(string_agg('xxxxxxxxxxxxxxxx', '')) FROM range(200000000)",
    ],
)
def test_a_huge_value_fails_in_its_own_process(world: World, setting: Any, sql: str) -> None:
    """A scalar call building a 2 GB value is neither interruptible nor counted by DuckDB's
    memory limit; the query's process meets its address-space cap instead."""
    setting(query_memory_limit="256MB", query_timeout_s="5")
    detail = world.query(TRACE, sql, status=422)["detail"]
    assert "QUERY_MEMORY_LIMIT" in detail or "QUERY_TIMEOUT_S" in detail, detail
    _healthy(world)


def test_a_long_scan_is_streamed_not_held(world: World, setting: Any) -> None:
    """`range(10^12)` answers its first rows at once: only limit + 1 rows are fetched."""
    setting(query_timeout_s="5")
    body = world.query(TRACE, "SELECT * FROM range(1000000000000)", limit=3)
    assert body["rows"] == [[0], [1], [2]] and body["truncated"] is True


_TOKENS = [
    "SELECT", "*", "FROM", "events", "kernels", "flows", "args", "read_csv('/etc/passwd')",
    ";", "COPY", "ATTACH", "INSTALL", "LOAD", "SET", "PRAGMA", "CALL", "CREATE", "DROP", "(",
    ")", "1", "'x'", "UNION", "ALL", "WHERE", "LIMIT", "JOIN", "ON", "=", ",", "--", "/*",
    "*/", "$$", "\x00", "WITH", "AS", "glob('/*')", "query('SELECT 1')", "TO", "'/tmp/x'",
    "sum(dur_ns)", "GROUP BY", "ORDER BY", "name", "id", "range(10)", "EXPLAIN", "VALUES",
]  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(words=st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=14))
def test_token_soup_never_gets_a_server_error(world: World, words: list[str]) -> None:
    sql = " ".join(words)
    response = world.client.post(
        f"/api/v1/traces/{world.traces[TRACE]}/query", json={"sql": sql, "limit": 5}
    )
    assert response.status_code in (200, 422), (sql, response.text)


def _traced_peak(call: Any) -> tuple[Any, int]:
    """`call()`'s answer and the peak of Python memory this process allocated during it
    (the API's side: the child's own memory is its process's, capped apart)."""
    tracemalloc.start()
    try:
        answer = call()
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_large_answer_is_cut_in_the_child(world: World, setting: Any) -> None:
    """40 MB of rows: the child stops at QUERY_MAX_ANSWER_BYTES, so the API process holds
    a few times that, not the result (which took the API from 240 to 906 MB at 300 MB)."""
    cap = 4 << 20
    setting(query_max_answer_bytes=str(cap))
    sql = "SELECT repeat('x', 1000) AS s FROM range(40000)"
    body, peak = _traced_peak(lambda: world.query(TRACE, sql, limit=100_000))
    assert body["truncated"] is True and body["truncated_by"] == "bytes"
    row_bytes = len(json.dumps(["x" * 1000])) + 1  # one row as JSON, and its separator
    assert len(body["rows"]) == cap // row_bytes
    assert body["rows"][0] == ["x" * 1000]
    assert peak < 32 << 20, peak
    small = world.query(TRACE, "SELECT 1 AS one FROM range(3)", limit=2)
    assert small["truncated_by"] == "rows" and len(small["rows"]) == 2


def test_settings_and_views_do_not_show_the_blob_store(world: World) -> None:
    """The query reads a hard link in a private temporary folder: `allowed_paths` and the
    views' SQL name it, not the server's blob store or the trace's dataset folder."""
    blob_dir = str(get_settings().blob_dir)
    trace_id = world.traces[TRACE]
    for sql in (
        "SELECT name, value FROM duckdb_settings()",
        "SELECT view_name, sql FROM duckdb_views()",
        "SELECT current_setting('allowed_paths') AS p",
    ):
        text = json.dumps(world.query(TRACE, sql, limit=100_000)["rows"])
        assert blob_dir not in text and trace_id not in text, text[:2000]
    (allowed,) = world.query(TRACE, "SELECT current_setting('allowed_paths')")["rows"][0]
    (link,) = allowed
    assert Path(link).name == "events.parquet" and "perfdash-query-" in link, allowed
    assert not Path(link).parent.exists()  # removed once the query answered

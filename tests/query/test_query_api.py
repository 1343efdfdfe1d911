"""The query API's answers: shape, types, JSON values, row limits, bad requests, schema."""

from __future__ import annotations

import pytest

from backend.models.query import MAX_QUERY_ROWS, MAX_SQL_CHARS
from tests.factories import upload_trace
from tests.query.conftest import World

TRACE = "h200_train_step"


def test_an_answer_has_columns_types_rows_and_timing(world: World) -> None:
    body = world.query(
        TRACE, "SELECT kind, count(*) AS n, sum(dur_ns) AS total FROM events GROUP BY kind"
    )
    assert body["columns"] == ["kind", "n", "total"]
    assert body["types"] == ["VARCHAR", "BIGINT", "HUGEINT"]
    assert body["truncated"] is False and body["elapsed_ms"] >= 0
    kinds = {r[0]: r[1] for r in body["rows"]}
    assert kinds["kernel"] == 51 and kinds["cpu_op"] == 183  # tests/data/torch/README.md


def test_values_become_json(world: World) -> None:
    body = world.query(
        TRACE,
        "SELECT (1::HUGEINT << 100) AS big, 9007199254740993::BIGINT AS past_2_53, "
        "1.25::DECIMAL(5,2) AS dec, 'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, "
        "'\\xAA\\x01'::BLOB AS blob, DATE '2026-12-02' AS day, "
        "TIMESTAMP '2026-12-02 07:30:00' AS ts, INTERVAL 90 MINUTE AS span, [1, NULL, 3] AS list, "
        "{'a': 1, 'b': [DATE '2026-01-01']} AS struct, MAP {1: 'x'} AS map, "
        "'{\"k\": 1}'::JSON AS js, true AS flag, NULL AS nothing",
    )
    row = dict(zip(body["columns"], body["rows"][0], strict=True))
    assert row == {
        "big": 2**100,
        "past_2_53": 9007199254740993,
        "dec": 1.25,
        "nan": None,
        "inf": None,
        "blob": "aa01",
        "day": "2026-12-02",
        "ts": "2026-12-02T07:30:00",
        "span": "1:30:00",
        "list": [1, None, 3],
        "struct": {"a": 1, "b": ["2026-01-01"]},
        "map": {"1": "x"},
        "js": '{"k": 1}',
        "flag": True,
        "nothing": None,
    }
    types = dict(zip(body["columns"], body["types"], strict=True))
    assert types["big"] == "HUGEINT" and types["dec"] == "DECIMAL(5,2)"
    assert types["struct"] == "STRUCT(a INTEGER, b DATE[])" and types["js"] == "JSON"


def test_rows_past_the_limit_are_cut_and_flagged(world: World) -> None:
    count = world.query(TRACE, "SELECT count(*) FROM events")["rows"][0][0]
    cut = world.query(TRACE, "SELECT id FROM events ORDER BY id", limit=5)
    assert cut["rows"] == [[1], [2], [3], [4], [5]] and cut["truncated"] is True
    whole = world.query(TRACE, "SELECT id FROM events", limit=count)
    assert len(whole["rows"]) == count and whole["truncated"] is False


@pytest.mark.parametrize(
    "body",
    [
        {"sql": "SELECT 1", "limit": 0},
        {"sql": "SELECT 1", "limit": -1},
        {"sql": "SELECT 1", "limit": MAX_QUERY_ROWS + 1},
        {"sql": "SELECT 1", "limit": 10**30},
        {"sql": "SELECT 1", "limit": "many"},
        {"sql": ""},
        {"sql": "SELECT 1 " + " " * MAX_SQL_CHARS},
        {"sql": None},
        {"limit": 10},
        {"sql": ["SELECT 1"]},
    ],
)
def test_requests_out_of_bounds_get_422(world: World, body: dict[str, object]) -> None:
    trace = world.traces[TRACE]
    response = world.client.post(f"/api/v1/traces/{trace}/query", json=body)
    assert response.status_code == 422, response.text


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("   ", "not 0"),
        ("-- only a comment", "not 0"),
        ("SELEC 1", "does not parse"),
        ("SELECT * FROM no_such_view", "does not exist"),
        ("SELECT 1/0::INTEGER + 'x'", "query failed"),
    ],
)
def test_empty_or_broken_sql_gets_422_saying_why(world: World, sql: str, words: str) -> None:
    assert words in world.query(TRACE, sql, status=422)["detail"]


def test_a_limit_over_the_setting_names_it(world: World, setting: object) -> None:
    setting(query_max_rows="10")  # type: ignore[operator]
    assert "QUERY_MAX_ROWS" in world.query(TRACE, "SELECT 1", limit=11, status=422)["detail"]
    assert world.query(TRACE, "SELECT 1", limit=10)["rows"] == [[1]]


def test_an_unknown_trace_is_404(world: World) -> None:
    assert world.query("no-such-trace", "SELECT 1", status=404)["detail"]
    assert world.client.get("/api/v1/traces/no-such-trace/query/schema").status_code == 404


def test_a_trace_not_ready_says_so(world: World) -> None:
    queued = upload_trace(world.client, b'{"traceEvents": [{"ph": "X"}]}', "queued.json")
    detail = world.query(queued, "SELECT 1", status=422)["detail"]
    assert "queued" in detail and "not ready" in detail


def test_the_schema_lists_every_view_with_the_types_queries_get(world: World) -> None:
    trace = world.traces[TRACE]
    schema = world.client.get(f"/api/v1/traces/{trace}/query/schema").json()
    views = {v["name"]: v for v in schema["views"]}
    assert list(views) == ["events", "kernels", "flows", "counters", "copies", "args"]
    assert [c["name"] for c in views["events"]["columns"]] == [
        "id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid", "tid",
        "correlation", "args",
    ]  # fmt: skip
    for name, view in views.items():
        assert all(c["description"] for c in view["columns"])
        for t in ("h200_train_step", "nsys_nccl_2gpu"):
            got = world.query(t, f"SELECT * FROM {name} LIMIT 1")
            assert got["columns"] == [c["name"] for c in view["columns"]]
            assert got["types"] == [c["type"] for c in view["columns"]]

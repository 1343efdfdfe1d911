"""`GET /traces` paging, filters, sort and search, `PATCH /traces/{id}` and the bulk delete,
on SQLite and PostgreSQL.

The list tests share one database per engine, seeded straight into the table
(`tests.factories.insert_traces`); every expectation is computed here from the seed rows,
never by perfdash's code.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings, get_settings
from backend.core.db import get_engine
from backend.main import create_app
from tests.conftest import ENGINES, fresh_database, settings_on
from tests.factories import insert_traces, token_headers, upload_and_ingest

TRACES = "/api/v1/traces"
START = datetime(2026, 1, 1, tzinfo=UTC)
N = 130
# Names a LIKE pattern would confuse: `%` and `_` must match only themselves.
ODD_NAMES = {0: "50%_done", 1: "50x_done", 2: "5000 done", 3: "a_b", 4: "axb", 5: "A_B upper"}


def _seed_row(i: int) -> dict[str, Any]:
    failed = i % 10 == 9
    return {
        "name": ODD_NAMES.get(i, f"Run-{(i * 37) % N:03d}"),
        "project": ("llm", "vision", "default")[i % 3],
        "format": ("torch_profiler", "nsys")[i % 2],
        "status": "failed" if failed else "ready",
        "error": f"parse failed at byte {i}\nline two\nline three" if failed else None,
        "size_bytes": (i * 7919) % 100_003,
        "event_counts": {"kernel": (i * 31) % 97, "cpu_op": i % 5},
        "tags": [["h200", "fp8"], ["a100"], ["fp8-big"], []][i % 4],
        "created_at": START + timedelta(hours=i),
    }


SEED = [_seed_row(i) for i in range(N)]


@pytest.fixture(scope="module", params=ENGINES)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, dict[str, dict[str, Any]]]]:
    """An app over one database per engine holding the N seed traces (id -> seed row)."""
    folder = tmp_path_factory.mktemp("list")
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        fresh_database(request.param, folder) as database_url,
        settings_on(database_url, folder, monkeypatch),
        TestClient(create_app()) as client,
    ):
        ids = insert_traces(get_engine(), SEED)
        yield client, dict(zip(ids, SEED, strict=True))


def _all(client: TestClient, **params: Any) -> tuple[list[dict[str, Any]], int]:
    """Every page of a query, 50 at a time, and the count the API gave."""
    items: list[dict[str, Any]] = []
    while True:
        body = client.get(TRACES, params={**params, "limit": 50, "offset": len(items)}).json()
        items += body["items"]
        if len(body["items"]) < 50:
            return items, body["count"]


def _ids(rows: dict[str, dict[str, Any]], keep: Any) -> set[str]:
    return {i for i, row in rows.items() if keep(row)}


def test_pages_cover_every_trace_once_newest_first(seeded: Any) -> None:
    client, rows = seeded
    pages = [client.get(TRACES, params={"limit": 50, "offset": o}).json() for o in (0, 50, 100)]
    assert [len(p["items"]) for p in pages] == [50, 50, N - 100]
    assert {p["count"] for p in pages} == {N}
    ids = [t["id"] for p in pages for t in p["items"]]
    assert len(set(ids)) == N and set(ids) == set(rows)
    created = [rows[i]["created_at"] for i in ids]
    assert created == sorted(created, reverse=True)
    past = client.get(TRACES, params={"limit": 50, "offset": 1000}).json()
    assert past == {"items": [], "count": N}


@pytest.mark.parametrize(
    ("params", "keep"),
    [
        ({"project": "vision"}, lambda r: r["project"] == "vision"),
        ({"format": "nsys"}, lambda r: r["format"] == "nsys"),
        ({"status": "failed"}, lambda r: r["status"] == "failed"),
        ({"tag": "fp8"}, lambda r: "fp8" in r["tags"]),  # not `fp8-big`
        ({"tag": " FP8-Big "}, lambda r: "fp8-big" in r["tags"]),  # normalized like stored
        ({"tag": "a10"}, lambda r: False),  # a prefix of a100 is not a tag
        (
            {"created_from": "2026-01-02", "created_to": "2026-01-03T06:00:00+02:00"},
            lambda r: START + timedelta(days=1) <= r["created_at"] < START + timedelta(hours=52),
        ),
        (
            {"project": "llm", "status": "ready", "tag": "a100"},
            lambda r: r["project"] == "llm" and r["status"] == "ready" and "a100" in r["tags"],
        ),
        ({"q": "50%_"}, lambda r: r["name"] == "50%_done"),
        ({"q": "a_b"}, lambda r: r["name"] in ("a_b", "A_B upper")),
        ({"q": "run-01"}, lambda r: r["name"].lower().startswith("run-01")),
    ],
)
def test_each_filter_and_search_selects_exactly_its_traces(
    seeded: Any, params: dict[str, str], keep: Any
) -> None:
    client, rows = seeded
    items, count = _all(client, **params)
    expected = _ids(rows, keep)
    assert {t["id"] for t in items} == expected
    assert count == len(expected)


@pytest.mark.parametrize(
    ("sort", "key"),
    [
        ("name", lambda r: r["name"].lower()),
        ("created", lambda r: r["created_at"]),
        ("size", lambda r: r["size_bytes"]),
        ("events", lambda r: sum(r["event_counts"].values())),
        ("status", lambda r: r["status"]),
    ],
)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sort_orders_every_page_by_the_field(seeded: Any, sort: str, key: Any, order: str) -> None:
    client, rows = seeded
    items, _ = _all(client, sort=sort, order=order)
    got = [key(rows[t["id"]]) for t in items]
    assert got == sorted((key(r) for r in rows.values()), reverse=order == "desc")
    assert len({t["id"] for t in items}) == N  # ties broken the same way on every page


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"limit": 501}, "limit"),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
        ({"sort": "duration"}, "sort"),
        ({"order": "up"}, "order"),
        ({"status": "done"}, "status"),
        ({"created_from": "yesterday"}, "created_from"),
        ({"created_to": "2026-13-01"}, "created_to"),
        ({"q": "x" * 513}, "q"),
        ({"project": "p" * 129}, "project"),
        ({"tag": "t" * 41}, "tag"),
    ],
)
def test_values_past_the_limits_are_422_naming_the_parameter(
    seeded: Any, params: dict[str, Any], where: str
) -> None:
    client, _ = seeded
    response = client.get(TRACES, params=params)
    assert response.status_code == 422, response.text
    assert where in response.text


def test_reversed_dates_and_bad_tag_say_what_is_wrong(seeded: Any) -> None:
    client, _ = seeded
    response = client.get(TRACES, params={"created_from": "2026-02-01", "created_to": "2026-01-01"})
    assert response.status_code == 422 and "before created_to" in response.json()["detail"]
    response = client.get(TRACES, params={"tag": 'a"b'})
    assert response.status_code == 422 and "'\"' is not allowed" in response.json()["detail"]


def test_facets_list_the_values_in_use(seeded: Any) -> None:
    client, rows = seeded
    body = client.get(f"{TRACES}/facets").json()
    assert body["projects"] == sorted({r["project"] for r in rows.values()})
    assert body["formats"] == sorted({r["format"] for r in rows.values()})
    assert body["tags"] == sorted({t for r in rows.values() for t in r["tags"]})


# ---- edits and deletes (the refusals share the seeded database: they change nothing) -------


@pytest.fixture
def one_trace(client: TestClient, engine: Engine) -> str:
    (trace_id,) = insert_traces(engine, [{"name": "before", "tags": ["old"], "note": "n"}])
    return trace_id


def test_patch_renames_tags_and_notes_with_normalized_tags(
    client: TestClient, one_trace: str
) -> None:
    body = {"name": "  after  ", "tags": [" H200 ", "fp8", "FP8", "run 7", ""], "note": "why\nso"}
    response = client.patch(f"{TRACES}/{one_trace}", json=body)
    assert response.status_code == 200, response.text
    got = client.get(f"{TRACES}/{one_trace}").json()
    assert (got["name"], got["tags"], got["note"]) == ("after", ["h200", "fp8", "run-7"], "why\nso")
    client.patch(f"{TRACES}/{one_trace}", json={"note": ""})  # only the note changes
    got = client.get(f"{TRACES}/{one_trace}").json()
    assert (got["name"], got["tags"], got["note"]) == ("after", ["h200", "fp8", "run-7"], None)
    assert [t["id"] for t in client.get(TRACES, params={"tag": "run-7"}).json()["items"]] == [
        one_trace
    ]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 513}, "name"),
        ({"name": "a\x00b"}, "name"),
        ({"tags": [f"t{i}" for i in range(21)]}, "tags"),
        ({"tags": ["x" * 41]}, "tags[0]"),
        ({"tags": ["ok", "no;pe"]}, "tags[1]"),
        ({"tags": ['quote"']}, "tags[0]"),
        ({"tags": "h200"}, "tags"),
        ({"note": "n" * 4001}, "note"),
        ({"note": "bell\x07"}, "note"),
        ({"owner": "me"}, "owner"),
    ],
)
def test_patch_past_its_limits_is_422_and_changes_nothing(
    seeded: Any, body: dict[str, Any], where: str
) -> None:
    client, rows = seeded
    one_trace = next(iter(rows))
    before = client.get(f"{TRACES}/{one_trace}").json()
    response = client.patch(f"{TRACES}/{one_trace}", json={"name": "renamed", **body})
    assert response.status_code == 422, response.text
    assert where in response.text
    assert client.get(f"{TRACES}/{one_trace}").json() == before


def test_patch_and_delete_of_unknown_traces_are_404(client: TestClient, one_trace: str) -> None:
    assert client.patch(f"{TRACES}/nope", json={"name": "x"}).status_code == 404
    response = client.post(f"{TRACES}/delete", json={"ids": [one_trace, "nope"]})
    assert response.status_code == 404 and "nope" in response.json()["detail"]
    assert client.get(f"{TRACES}/{one_trace}").status_code == 200  # all or none


@pytest.mark.parametrize(
    "body", [{"ids": []}, {"ids": ["x"] * 501}, {"ids": "abc"}, {}, {"ids": ["a"], "all": True}]
)
def test_bulk_delete_body_past_its_limits_is_422(seeded: Any, body: dict[str, Any]) -> None:
    client, rows = seeded
    one_trace = next(iter(rows))
    assert client.post(f"{TRACES}/delete", json=body).status_code == 422
    assert client.get(f"{TRACES}/{one_trace}").status_code == 200


def _stored_files(settings: Settings) -> set[Path]:
    return {p for p in settings.blob_dir.rglob("*") if p.is_file()}


def test_bulk_delete_removes_rows_blobs_and_datasets(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    small = b'{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 1, "dur": 2}]}'
    kept = upload_and_ingest(client, engine, settings, small, "kept.json")
    kept_files = _stored_files(settings)
    gone = [upload_and_ingest(client, engine, settings, h200_trace, "a.json.gz")]
    gone += insert_traces(engine, [{"name": "row only"}])
    assert (settings.blob_dir / "datasets" / gone[0]).is_dir()
    response = client.post(f"{TRACES}/delete", json={"ids": [*gone, gone[0]]})
    assert response.status_code == 200 and response.json() == {"ids": gone}
    assert [client.get(f"{TRACES}/{t}").status_code for t in gone] == [404, 404]
    assert _stored_files(settings) == kept_files  # the kept trace's blob and dataset only
    assert client.get(TRACES).json()["count"] == 1 and kept


@pytest.fixture
def auth_on(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The app with AUTH=password (any API token may read)."""
    monkeypatch.setenv("PERFDASH_AUTH", "password")
    get_settings.cache_clear()
    with TestClient(create_app(), base_url="https://testserver") as client:
        yield client


def test_a_token_without_traces_write_can_list_but_not_change(
    auth_on: TestClient, engine: Engine
) -> None:
    (trace_id,) = insert_traces(engine, [{"name": "guarded"}])
    reader = token_headers(engine, "metrics:write", name="reader")
    writer = token_headers(engine, "traces:write", name="writer")
    assert auth_on.get(TRACES, headers=reader).json()["count"] == 1
    for method, path, body in (
        ("PATCH", f"{TRACES}/{trace_id}", {"name": "x"}),
        ("DELETE", f"{TRACES}/{trace_id}", None),
        ("POST", f"{TRACES}/delete", {"ids": [trace_id]}),
    ):
        response = auth_on.request(method, path, json=body, headers=reader)
        assert response.status_code == 403 and "traces:write" in response.text, response.text
    assert auth_on.get(f"{TRACES}/{trace_id}", headers=reader).json()["name"] == "guarded"
    assert auth_on.patch(f"{TRACES}/{trace_id}", json={"name": "x"}, headers=writer).is_success
    deleted = auth_on.post(f"{TRACES}/delete", json={"ids": [trace_id]}, headers=writer)
    assert deleted.status_code == 200, deleted.text

"""`?format=torch-compile-times`: torch.compile's timing table pushed as metric points, and
SLAs that guard compile time and recompiles (issue #26, item 2).

Expected values are read from `tests/data/torch/h200_compile.compile_times.json`, which
`tests/data/make_h200_checklist.py compile` wrote from `compile_times(repr="csv")` on the H200.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from backend.models.metrics import MetricPoint
from tests.conftest import DATA
from tests.factories import post_sla

FIXTURE = json.loads((DATA / "torch" / "h200_compile.compile_times.json").read_text())
TABLE = FIXTURE["compile_times_csv"]  # [[phase, ...], ["seconds", ...]]
# The fixture's model: one graph break, and a second batch size that recompiles both frames
# (the compile view of its trace finds the same: tests/views/test_compile_api.py).
COUNTERS = {"recompiles": 2, "graph_breaks": 1}
QUERY = "format=torch-compile-times&project=llm&benchmark=mlp_compile&run_id=r1&commit=c1"


def _push(client: TestClient, auth: dict[str, str], doc: Any, query: str = QUERY) -> Any:
    return client.post(f"/api/v1/metrics?{query}", json=doc, headers=auth)


def _points(engine: Engine) -> dict[str, tuple[float | None, str]]:
    with Session(engine) as session:
        rows = session.exec(select(MetricPoint)).all()
    return {p.metric: (p.value, p.unit) for p in rows}


def test_table_and_counters_become_points(
    client: TestClient, auth: dict[str, str], engine: Engine
) -> None:
    response = _push(client, auth, {"compile_times": TABLE, "counters": COUNTERS})
    assert response.status_code == 200, response.text
    want = {f"compile.{n}_s": (float(v), "s") for n, v in zip(*TABLE, strict=True)}
    want |= {f"compile.{n}": (float(v), "count") for n, v in COUNTERS.items()}
    assert _points(engine) == want
    assert want["compile._compile.compile_inner_s"] == (5.207991, "s")


def test_bare_table_and_per_call_samples(
    client: TestClient, auth: dict[str, str], engine: Engine
) -> None:
    # compile_times(repr="csv", aggregate=False): every call's time, joined by ", "
    per_call = [["_compile.compile_inner", "build_guards"], ["4.16, 0.27, 0.52", "0.04"]]
    response = _push(client, auth, per_call)
    assert response.status_code == 200, response.text
    with Session(engine) as session:
        rows = {p.metric: p for p in session.exec(select(MetricPoint)).all()}
    inner = rows["compile._compile.compile_inner_s"]
    assert inner.samples == [4.16, 0.27, 0.52] and inner.n == 3
    assert rows["compile.build_guards_s"].value == 0.04


def test_absolute_slas_guard_compile_time_and_recompiles(
    client: TestClient, auth: dict[str, str]
) -> None:
    common = {"project": "llm", "benchmark": "mlp_compile", "rule": "absolute", "op": "<="}
    post_sla(client, auth, name="compile time", metric="compile._compile.compile_inner_s",
             threshold=10, **common)  # fmt: skip
    post_sla(client, auth, name="recompiles", metric="compile.recompiles", threshold=1, **common)
    response = _push(client, auth, {"compile_times": TABLE, "counters": COUNTERS})
    assert response.status_code == 200, response.text
    verdicts = {v["name"]: (v["verdict"], v["observed"]) for v in response.json()["verdicts"]}
    assert verdicts == {"compile time": ("pass", 5.207991), "recompiles": ("fail", 2.0)}


BAD = [
    ([["a", "b"], ["1.0"]], "$"),
    ([["a"], ["fast"]], "$[1][0]"),
    ([["a"], ["1.0, x"]], "$[1][0]"),
    ([["a"], ["-1"]], "$[1][0]"),
    ([["a"], [True]], "$[1][0]"),
    ([["a"], ["1e999"]], "$[1][0]"),
    ([["a"], [[]]], "$[1][0]"),
    ([[""], ["1"]], "$[0][0]"),
    ([[1], ["1"]], "$[0][0]"),
    ([["a"], ["1"], ["2"]], "$"),
    ([], "$"),
    ({"counters": {"recompiles": 1}}, "$.compile_times"),
    ({"compile_times": TABLE, "counters": {"recompiles": "two"}}, "$.counters.recompiles"),
    ({"compile_times": TABLE, "counters": [1]}, "$.counters"),
    ([["a" * 200], ["1"]], "$.points[0].metric"),
    ([["a"], [", ".join(["1"] * 100_001)]], "$[1][0]"),
]


def test_bad_tables_are_refused_whole(
    client: TestClient, auth: dict[str, str], engine: Engine
) -> None:
    for doc, path in BAD:
        response = _push(client, auth, doc)
        assert response.status_code == 422, (doc, response.text)
        paths = [p["path"] for p in response.json()["detail"]["problems"]]
        assert path in paths, (str(doc)[:80], paths)
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(MetricPoint)).one() == 0

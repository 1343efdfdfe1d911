"""`/traces/{id}/ranges` against `nsys stats --report nvtx_sum` and the raw torch JSON.

The nsys references are the `*_nvtx_sum.csv` files that `nsys stats` wrote beside each
export (tests/data/nsys/README.md); the torch expectations are computed here from the
trace's `user_annotation` / `gpu_user_annotation` events with `json` and `statistics`.
"""

from __future__ import annotations

import csv
import gzip
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace
from tests.conftest import CORPUS
from tests.factories import Ingest, upload
from tests.views.kineto_builder import document, kernel

DATA = Path(__file__).resolve().parents[1] / "data"
NSYS = sorted(p.name.removesuffix("_nvtx_sum.csv") for p in (DATA / "nsys").glob("*_nvtx_sum.csv"))
TORCH = [
    DATA / "torch" / "h200_train_step.pt.trace.json.gz",
    DATA / "torch" / "h200_gpt_small.pt.trace.json.gz",
    DATA / "torch" / "h200_cuda_graph.pt.trace.json.gz",
    CORPUS / "kineto" / "hta__trace_diff_test_rank1_of_2.json.gz",
]
SIDES = {"user_annotation": "cpu", "gpu_user_annotation": "gpu"}


def _key(item: dict[str, Any]) -> tuple[str, str | None, str | None, str]:
    return item["name"], item["domain"], item["style"], item["side"]


def _nvtx_sum(fixture: str) -> dict[tuple[str, str | None, str | None, str], dict[str, str]]:
    """nsys's rows by (text, domain, style, side): `Range` is `domain:text`."""
    with (DATA / "nsys" / f"{fixture}_nvtx_sum.csv").open() as f:
        rows = list(csv.DictReader(f))
    out = {}
    for r in rows:
        domain, _, text = r["Range"].partition(":")
        out[(text, domain or None, r["Style"], "cpu")] = r
    return out


@pytest.mark.parametrize("fixture", NSYS)
def test_ranges_equal_nsys_stats_nvtx_sum(client: TestClient, ingest: Ingest, fixture: str) -> None:
    expected = _nvtx_sum(fixture)
    trace_id = ingest(DATA / "nsys" / f"{fixture}.sqlite")
    body = client.get(f"/api/v1/traces/{trace_id}/ranges").json()
    got = {_key(i): i for i in body["items"]}
    assert set(got) == set(expected) and body["total"] == len(expected) and body["note"] == ""
    for key, ref in expected.items():
        i = got[key]
        assert i["count"] == int(ref["Instances"])
        assert i["total_ns"] == int(ref["Total Time (ns)"])
        assert (i["min_ns"], i["max_ns"]) == (int(ref["Min (ns)"]), int(ref["Max (ns)"]))
        # nsys prints one decimal: the means, medians and deviations agree to it
        for field, col in (
            ("avg_ns", "Avg (ns)"),
            ("med_ns", "Med (ns)"),
            ("std_ns", "StdDev (ns)"),
        ):
            assert i[field] == pytest.approx(float(ref[col]), abs=0.051), (key, field)
        assert i["time_pct"] == pytest.approx(float(ref["Time (%)"]), abs=0.051)
    # nsys lists rows by total time, descending; so do we
    totals = [i["total_ns"] for i in body["items"]]
    assert totals == sorted(totals, reverse=True)


def _torch_expected(*paths: Path) -> dict[tuple[str, str | None, str | None, str], list[int]]:
    out: dict[tuple[str, str | None, str | None, str], list[int]] = defaultdict(list)
    for path in paths:
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for e in doc["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") in SIDES:
                out[(e["name"], None, None, SIDES[e["cat"]])].append(round(e["dur"] * 1000))
    return out


@pytest.mark.parametrize("path", TORCH, ids=lambda p: p.name)
def test_torch_record_function_ranges_equal_the_raw_json(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    if not path.exists():
        pytest.skip(f"corpus file {path} absent")
    expected = _torch_expected(path)
    assert expected, "the trace has no annotations: the test checks nothing"
    trace_id = ingest(path)
    body = client.get(f"/api/v1/traces/{trace_id}/ranges").json()
    got = {_key(i): i for i in body["items"]}
    assert set(got) == set(expected)
    for key, durs in expected.items():
        i = got[key]
        assert (i["count"], i["total_ns"]) == (len(durs), sum(durs)), key
        assert (i["min_ns"], i["max_ns"]) == (min(durs), max(durs))
        assert i["med_ns"] == pytest.approx(statistics.median(durs))
        assert i["avg_ns"] == pytest.approx(statistics.fmean(durs))
        std = statistics.stdev(durs) if len(durs) > 1 else 0.0
        assert i["std_ns"] == pytest.approx(std, rel=1e-9, abs=1e-6)
    for side in ("cpu", "gpu"):
        shares = [i["time_pct"] for i in body["items"] if i["side"] == side]
        assert not shares or sum(shares) == pytest.approx(100.0, abs=0.01)
    gpu_only = client.get(f"/api/v1/traces/{trace_id}/ranges", params={"side": "gpu"}).json()
    assert {_key(i) for i in gpu_only["items"]} == {k for k in expected if k[3] == "gpu"}


def test_ranks_of_a_ddp_job_add_up(client: TestClient, engine: Engine, settings: Settings) -> None:
    """One trace of two rank files: each name's instances are both ranks' (as nsys does for
    the processes of one report)."""
    files = [DATA / "ddp" / f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
    expected = _torch_expected(*files)
    assert expected, "the DDP fixture has no annotations: the test checks nothing"
    trace_id = upload(client, [(f.name, f.read_bytes()) for f in files])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    body = client.get(f"/api/v1/traces/{trace_id}/ranges").json()
    got = {_key(i): (i["count"], i["total_ns"]) for i in body["items"]}
    assert got == {k: (len(v), sum(v)) for k, v in expected.items()}


def test_range_durations_list_every_instance(client: TestClient, ingest: Ingest) -> None:
    path = DATA / "nsys" / "train_step.sqlite"
    trace_id = ingest(path)
    url = f"/api/v1/traces/{trace_id}/ranges/durations"
    body = client.get(url, params={"name": "forward"}).json()
    ref = _nvtx_sum("train_step")[("forward", None, "PushPop", "cpu")]
    assert body["count"] == int(ref["Instances"]) == len(body["dur_ns"])
    assert sum(body["dur_ns"]) == int(ref["Total Time (ns)"])
    assert body["start_ns"] == sorted(body["start_ns"])
    longest = client.get(url, params={"name": "forward", "limit": 1}).json()
    assert longest["dur_ns"] == [int(ref["Max (ns)"])] and longest["count"] == 3
    none = client.get(url, params={"name": "forward", "domain": "NCCL"}).json()
    assert none["count"] == 0 and none["dur_ns"] == []


def test_limit_and_a_trace_without_ranges(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(DATA / "nsys" / "train_step.sqlite")
    body = client.get(f"/api/v1/traces/{trace_id}/ranges", params={"limit": 2}).json()
    assert len(body["items"]) == 2 and body["total"] == 13
    bare = ingest(document([kernel("k", 10.0, 5.0, 1)]), "bare.json")
    empty = client.get(f"/api/v1/traces/{bare}/ranges").json()
    assert empty["items"] == [] and "record_function" in empty["note"]


@pytest.mark.parametrize(
    ("query", "where"),
    [
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("side=both", "side"),
    ],
)
def test_bad_parameters_are_422(client: TestClient, ingest: Ingest, query: str, where: str) -> None:
    trace_id = ingest(document([kernel("k", 10.0, 5.0, 1)]), "bare.json")
    response = client.get(f"/api/v1/traces/{trace_id}/ranges?{query}")
    assert response.status_code == 422 and where in response.text


def test_durations_need_a_name_and_an_unknown_trace_is_404(client: TestClient) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    assert client.get(f"/api/v1/traces/{missing}/ranges").status_code == 404
    assert client.get(f"/api/v1/traces/{missing}/ranges/durations?name=x").status_code == 404
    response = client.get(f"/api/v1/traces/{missing}/ranges/durations")
    assert response.status_code == 422 and "name" in response.text

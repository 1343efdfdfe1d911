"""`/api/v1/compare` per step, by shares, kernel matching and the headline, against sums
taken straight from the uploaded JSON (a few lines of json and arithmetic, no perfdash code).

The traces are `tests.views.compare_traces`: one stream, kernels one after another, so a
trace's compute time is the sum of its kernel durations and its idle time the rest of the
span from the first kernel's start to the last one's end.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dashboard.components.compare_panel import compare_panel
from tests.factories import Ingest
from tests.views.compare_traces import (
    ADD,
    EAGER,
    FAST,
    GEMM_A,
    GEMM_B,
    MAX,
    MEAN,
    SOFTMAX_A,
    SOFTMAX_B,
    workload,
)

JSON = dict[str, Any]


@dataclass
class Raw:
    """What the JSON itself says: steps, kernel ns by name, GPU span and busy time."""

    steps: int
    totals: dict[str, int]
    span_ns: int
    busy_ns: int

    def per_step(self, names: list[str]) -> float:
        return sum(self.totals[n] for n in names) / self.steps

    def share(self, names: list[str]) -> float:
        return 100 * sum(self.totals[n] for n in names) / sum(self.totals.values())


def _raw(doc: bytes) -> Raw:
    events = json.loads(doc)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    totals: dict[str, int] = defaultdict(int)
    for k in kernels:
        totals[k["name"]] += round(k["dur"] * 1000)
    start = min(k["ts"] for k in kernels)
    end = max(k["ts"] + k["dur"] for k in kernels)
    steps = sum(e["name"].startswith("ProfilerStep#") for e in events)
    return Raw(steps, dict(totals), round((end - start) * 1000), sum(totals.values()))


def _compare(client: TestClient, ingest: Ingest, a: bytes, b: bytes) -> JSON:
    ia, ib = ingest(a, "a.json"), ingest(b, "b.json")
    response = client.get("/api/v1/compare", params={"a": ia, "b": ib})
    assert response.status_code == 200, response.text
    body: JSON = response.json()
    return body


def _by(rows: list[JSON], field: str) -> dict[str, JSON]:
    return {r[field]: r for r in rows}


def test_runs_of_different_lengths_compare_per_step(client: TestClient, ingest: Ingest) -> None:
    """12 steps against 3 of the same workload: every per-step number is the same."""
    a_doc, b_doc = workload(EAGER, 12), workload(EAGER, 3)
    ra, rb = _raw(a_doc), _raw(b_doc)
    body = _compare(client, ingest, a_doc, b_doc)
    assert (body["basis"], body["steps_a"], body["steps_b"]) == ("per_step", ra.steps, rb.steps)
    assert "A: 12 steps, B: 3 steps" in body["basis_note"]
    assert body["new_kernels"] == body["gone_kernels"] == []
    assert sorted(n for r in body["kernels"] for n in r["names_a"]) == sorted(ra.totals)
    for row in body["kernels"]:
        assert row["a"] == pytest.approx(ra.per_step(row["names_a"]))
        assert row["b"] == pytest.approx(rb.per_step(row["names_b"]))
        assert row["delta_pct"] == pytest.approx(0, abs=1e-9), row["name"]
    kernel = _by(body["metrics"], "metric")["gpu_kernel_ns_per_step"]
    assert (kernel["a"], kernel["b"]) == pytest.approx((ra.busy_ns / 12, rb.busy_ns / 3))
    assert kernel["delta_pct"] == pytest.approx(0, abs=1e-9)
    categories = _by(body["categories"], "category")
    assert categories["compute"]["a"] == pytest.approx(ra.busy_ns / ra.steps)
    assert categories["compute"]["b"] == pytest.approx(rb.busy_ns / rb.steps)
    assert categories["idle"]["a"] == pytest.approx((ra.span_ns - ra.busy_ns) / ra.steps)
    assert categories["idle"]["b"] == pytest.approx((rb.span_ns - rb.busy_ns) / rb.steps)
    assert "| A per step | B per step |" in body["markdown"]


def test_a_trace_without_steps_is_compared_by_shares(client: TestClient, ingest: Ingest) -> None:
    """B has no step markers: nothing is divided by a made-up step count of 1."""
    a_doc, b_doc = workload(EAGER, 3), workload(EAGER, 3, markers=False)
    ra, rb = _raw(a_doc), _raw(b_doc)
    body = _compare(client, ingest, a_doc, b_doc)
    assert (body["basis"], body["steps_a"], body["steps_b"]) == ("share", 3, 0)
    assert "B has no steps" in body["basis_note"]
    kernel = _by(body["metrics"], "metric")["gpu_kernel_ns_per_step"]
    assert kernel["a"] == pytest.approx(ra.busy_ns / 3) and kernel["b"] is None
    assert kernel["delta"] is None
    assert "GPU kernel time per step" in body["markdown"].split("Not recorded in both traces:")[1]
    for row in body["kernels"]:
        assert row["a"] == pytest.approx(ra.share(row["names_a"]))
        assert row["b"] == pytest.approx(rb.share(row["names_b"]))
        assert row["better"] is None
    compute = _by(body["categories"], "category")["compute"]
    assert compute["a"] == pytest.approx(100 * ra.busy_ns / ra.span_ns)
    assert compute["b"] == pytest.approx(100 * rb.busy_ns / rb.span_ns)
    assert "| A share of kernel time | B share of kernel time |" in body["markdown"]


def test_kernels_match_by_name_then_template_free_name_then_launching_op(
    client: TestClient, ingest: Ingest
) -> None:
    a_doc, b_doc = workload(EAGER, 4), workload(FAST, 2)
    ra, rb = _raw(a_doc), _raw(b_doc)
    body = _compare(client, ingest, a_doc, b_doc)
    matched = {r["key"]: (r["match"], r["names_a"], r["names_b"]) for r in body["kernels"]}
    assert matched == {
        ADD.removeprefix("void "): ("exact", [ADD], [ADD]),
        "Kernel2": ("name", [GEMM_A], [GEMM_B]),
        "softmax_warp_forward": ("name", [SOFTMAX_A], [SOFTMAX_B]),
        "aten::relu": ("op", ["relu_kernel_eager"], ["fused_relu_dropout_kernel"]),
    }
    # Unmatched kernels one row each; the two reduce_kernel instantiations stay apart.
    assert sorted(r["name"] for r in body["new_kernels"]) == ["new_norm_kernel", "new_scale_kernel"]
    assert sorted(r["name"] for r in body["gone_kernels"]) == sorted([MAX, MEAN, "dropout_kernel"])
    for row in body["kernels"] + body["new_kernels"] + body["gone_kernels"]:
        a = ra.per_step(row["names_a"]) if row["names_a"] else 0
        b = rb.per_step(row["names_b"]) if row["names_b"] else 0
        assert (row["a"], row["b"], row["delta"]) == pytest.approx((a, b, b - a)), row["key"]


def _independent_candidates(ra: Raw, rb: Raw, body: JSON) -> dict[tuple[str, str], float]:
    """Every per-step delta the headline may rank: kernel rows (as grouped by the API, valued
    from the JSON), compute and idle. No copies, memsets or communication in these traces."""
    out = {}
    for row in body["kernels"] + body["new_kernels"] + body["gone_kernels"]:
        a = ra.per_step(row["names_a"]) if row["names_a"] else 0
        b = rb.per_step(row["names_b"]) if row["names_b"] else 0
        out[("kernel", row["key"])] = b - a
    out[("category", "compute")] = rb.busy_ns / rb.steps - ra.busy_ns / ra.steps
    idle_a, idle_b = ra.span_ns - ra.busy_ns, rb.span_ns - rb.busy_ns
    out[("idle", "idle")] = idle_b / rb.steps - idle_a / ra.steps
    return out


def _graph_bars(component: Any, graph_id: str) -> dict[str, float]:
    """customdata (row key) -> bar value of the chart `graph_id` in a Dash component tree,
    in ns (read back through the axis's unit) or share points."""
    if getattr(component, "id", None) == graph_id:
        bar, suffix = component.figure.data[0], component.figure.layout.xaxis.ticksuffix
        scale = {None: 1.0, "": 1.0, " ns": 1.0, " µs": 1e3, " ms": 1e6, " s": 1e9}[suffix]
        return {key: x * scale for key, x in zip(bar.customdata, bar.x, strict=True)}
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found = _graph_bars(child, graph_id)
            if found:
                return found
    return {}


def test_the_headline_ranks_per_step_deltas_and_agrees_with_the_charts(
    client: TestClient, ingest: Ingest
) -> None:
    a_doc, b_doc = workload(EAGER, 4), workload(FAST, 2)
    ra, rb = _raw(a_doc), _raw(b_doc)
    body = _compare(client, ingest, a_doc, b_doc)
    candidates = _independent_candidates(ra, rb, body)
    headline = body["headline"]
    expected = sorted((abs(d) for d in candidates.values() if d), reverse=True)[: len(headline)]
    assert len(headline) == 5
    assert [abs(h["delta"]) for h in headline] == pytest.approx(expected)
    for h in headline:
        assert h["delta"] == pytest.approx(candidates[(h["kind"], h["key"])])
        assert h["unit"] == "ns/step" and h["better"] == (h["delta"] < 0)
    assert (headline[0]["kind"], headline[0]["key"]) == ("category", "compute")

    panel = compare_panel(body, "compare")
    kernel_bars = _graph_bars(panel, "compare-delta-chart")
    category_bars = _graph_bars(panel, "compare-category-chart")
    for h in headline:
        bars = kernel_bars if h["kind"] == "kernel" else category_bars
        assert bars[h["key"]] == pytest.approx(h["delta"])  # ns per step, or share points
    report = body["markdown"].split("### Biggest changes")[1].split("###")[0]
    assert [line[:2] for line in report.strip().splitlines()] == ["1.", "2.", "3.", "4.", "5."]
    compute_a, compute_b = ra.busy_ns / ra.steps / 1e6, rb.busy_ns / rb.steps / 1e6
    first = f"1. Compute: {compute_a:.2f} ms → {compute_b:.2f} ms per step"
    assert report.strip().splitlines()[0].startswith(first)

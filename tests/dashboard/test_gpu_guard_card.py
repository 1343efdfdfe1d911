"""The run page's GPU-state card, from a GPU state replayed from the H200 NVML probe."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from dash.development.base_component import Component

from dashboard.components.gpu_guard import flag_badges, gpu_state_section
from dashboard.figures.gpu_state import gpu_state_figure
from tests.bench.test_gpu_guard import monitored, phase
from workers.bench.gpu_flags import evaluate

PROBE_FILE = Path(__file__).resolve().parents[2] / "perf/gpu_guard/results/nvml_probe_h200.json.gz"
STATIC = json.loads(gzip.decompress(PROBE_FILE.read_bytes()))["static"]


def _texts(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list | tuple):
        return [t for child in node for t in _texts(child)]
    if isinstance(node, Component):
        return _texts(getattr(node, "children", None))
    return []


def _find(node: Any, kind: str) -> list[Any]:
    found = [node] if type(node).__name__ == kind else []
    children = getattr(node, "children", None)
    if isinstance(children, list | tuple):
        return found + [n for c in children for n in _find(c, kind)]
    if isinstance(children, Component):
        return found + _find(children, kind)
    return found


def test_badges_and_chart_of_a_power_capped_run() -> None:
    state = monitored(phase("sustained"))
    flags = evaluate(state, 0.9)
    badges = flag_badges(flags)
    assert badges is not None
    assert "throttled · sw_power_cap · gpu0" in _texts(badges)
    assert flag_badges([]) is None

    card = gpu_state_section(flags, {"gpu_state": state})
    text = " ".join(_texts(card))
    assert "sw_power_cap in 99.6% of 1500 samples" in text and STATIC["name"] in text
    (graph,) = _find(card, "Graph")
    lines = sorted(s["y0"] for s in graph.figure.layout.shapes)
    assert lines == sorted([STATIC["sm_max"], 700.0, STATIC["slowdown_temp"]])
    gpu = state["gpus"][0]
    red = [t for t in graph.figure.data if t.mode == "markers"]
    capped = [r for r in gpu["series"]["reasons"] if r & 4]
    assert len(red) == 1 and len(red[0].x) == len(capped)


def test_gaps_between_timed_loops_and_an_idle_gpu() -> None:
    gpu = monitored(phase("idle0"))["gpus"][0]
    gpu["series"]["window"] = [0] * 10 + [1] * (len(gpu["series"]["t_s"]) - 10)
    figure = gpu_state_figure(gpu, 0x6EC)
    clock = figure.data[0]
    assert list(clock.y).count(None) == 1  # one break, between the two loops
    assert not [t for t in figure.data if t.mode == "markers"]  # gpu_idle is no slowdown


def test_settle_report_and_unsampled_runs() -> None:
    idle = {"converged": False, "waited_s": 60.0, "why": "gpu0: 63 °C > 50 °C"}
    settle = {"converged": False, "idle": idle, "steady": {"skipped": "a command times itself"}}
    text = " ".join(_texts(gpu_state_section([], {"settle": settle})))
    assert "60.0 s (gave up: gpu0: 63 °C > 50 °C)" in text
    assert "skipped: a command times itself" in text and "Not sampled" in text

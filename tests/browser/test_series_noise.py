"""The series page draws the noise band learned from A/A runs and shows flagged runs
hollow with their flags in the hover; the SLA board says why the latest run was skipped.

Points go in over HTTP as a CI job and a GPU runner would send them (the runner's
`environment.flags`); headless Chromium reads the pages.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_sla_pages import _token

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
THROTTLED = {"flag": "throttled", "gpu": 0, "reason": "sw_power_cap", "detail": "SM at 1.1 GHz"}
CONTENDED = {"flag": "contended", "gpu": 0, "reason": "other_process", "detail": "pid 4242"}


def _seed(server: Server) -> int:
    """A require_stable SLA with no tolerance (so the band's MDC), one commit run six times
    (A/A), 12 more commits, a contended run mid-way and a throttled last run. Returns the
    number of points."""
    api = httpx.Client(
        base_url=server.base_url + "/api/v1",
        headers={"Authorization": f"Bearer {_token(server)}"},
        timeout=30,
    )
    base = {"project": "llm", "benchmark": "train", "metric": "step_time_ms"}
    sla = {**base, "name": "step stable", "rule": "relative", "require_stable": True}
    assert api.post("/slas/apply", json=[sla]).status_code == 200
    rng = random.Random(22)
    pushes = [("aa0000", None)] * 6 + [(f"c{i:05d}", None) for i in range(1, 13)]
    pushes[10] = (pushes[10][0], CONTENDED)
    pushes.append(("c00013", THROTTLED))
    for n, (commit, flag) in enumerate(pushes):
        value = rng.gauss(100.0, 0.6) * (1.12 if flag else 1.0)
        doc = {
            **{k: base[k] for k in ("project", "benchmark")},
            "commit": commit,
            "branch": "main",
            "run_id": f"ci-{n}",
            "timestamp": f"2026-11-02T10:{n:02d}:00Z",
            "environment": {"gpu_model": "H200", **({"flags": [flag]} if flag else {})},
            "points": [{"metric": "step_time_ms", "unit": "ms", "value": value}],
        }
        assert api.post("/metrics", json=doc).status_code == 200
    return len(pushes)


def test_series_draws_the_noise_band_and_flagged_runs(
    server_without_worker: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    runs = _seed(server_without_worker)
    page.goto(
        server_without_worker.base_url + "/series?project=llm&benchmark=train&metric=step_time_ms"
    )
    graph = page.locator("#series-graph .js-plotly-plot")
    expect(graph.locator(".legendtext", has_text="noise band ±")).to_have_count(1, timeout=30_000)
    expect(graph.locator(".legendtext", has_text="flagged run")).to_have_count(1)
    expect(page.locator(".series-noise")).to_contain_text("6 runs")
    expect(page.locator(".series-noise-panel")).to_contain_text("2 run(s) flagged")
    hollow = page.evaluate(
        "() => document.querySelector('#series-graph .js-plotly-plot').data"
        ".find(t => t.marker && t.marker.symbol === 'circle-open').x"
    )
    assert hollow == [10, runs - 1]
    flagged = graph.locator(".scatterlayer .trace").last.locator(".points path")
    expect(flagged).to_have_count(2)
    box = flagged.last.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(graph.locator(".hovertext")).to_contain_text("throttled GPU 0 (sw_power_cap)")
    page.screenshot(path=artifacts / "series_noise_band.png")
    DOCS_IMG.mkdir(exist_ok=True)
    shutil.copy(artifacts / "series_noise_band.png", DOCS_IMG / "series_noise_band.png")

    page.goto(server_without_worker.base_url + "/slas")
    tile = page.frame_locator("#slas-frame").locator(".sla-tile")
    expect(tile.locator(".sla-skip")).to_contain_text("skipped: throttled (GPU 0, sw_power_cap)")
    expect(tile).to_contain_text("stable runs only")
    page.screenshot(path=artifacts / "sla_board_skipped.png")

    page.goto(server_without_worker.base_url + "/runs")
    newest = page.locator(".runs-table tbody tr").first
    expect(newest.locator(".run-chip-flag")).to_have_text("⚠ throttled GPU 0", timeout=30_000)
    expect(newest.locator(".run-chip-skipped")).to_contain_text("step stable: skipped")
    assert page_errors.messages == []

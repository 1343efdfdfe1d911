"""The SLA board, a series and the runs page, after real pushes through the HTTP API.

A token is made with `perfdash token create` on the server's own data dir; SLAs and points
go in over HTTP as CI would send them; headless Chromium reads the pages.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from playwright.sync_api import Page, expect

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]
REPO = Path(__file__).resolve().parents[2]
RUNS = 30
SHIFT_AT = 20


def _token(server: Server) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "workers.cli", "token", "create", "--scope", "admin"],
        env=server.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.strip()


def _seed(server: Server) -> None:
    """Three SLAs (one passes, one fails, one has no data) and 30 runs with a step at 20."""
    headers = {"Authorization": f"Bearer {_token(server)}"}
    api = httpx.Client(base_url=server.base_url + "/api/v1", headers=headers, timeout=30)
    base = {"project": "llm-train", "benchmark": "gpt-small"}
    slas: list[dict[str, Any]] = [
        {
            **base,
            "name": "step p95",
            "metric": "step_time_ms",
            "statistic": "p95",
            "threshold": 130,
            "severity": "critical",
        },
        {**base, "name": "throughput", "metric": "tokens_per_s", "op": ">=", "threshold": 45000},
        {
            **base,
            "name": "peak memory",
            "metric": "peak_mem_gib",
            "rule": "no_increase",
            "tolerance_pct": 1,
        },
    ]
    assert api.post("/slas/apply", json=slas).status_code == 200
    rng = random.Random(4)
    for i in range(RUNS):
        mean = 100.0 if i < SHIFT_AT else 112.0
        doc = {
            **base,
            "commit": f"{i:02d}" + "abcdef0123456789"[:6],
            "branch": "main",
            "run_id": f"ci-{i}",
            "timestamp": f"2026-11-{1 + i // 2:02d}T{10 + i % 2}:00:00Z",
            "environment": {"gpu_model": "H200", "driver": "560.35"},
            "trace_id": f"trace{i:03d}" if i in (SHIFT_AT - 1, SHIFT_AT) else None,
            "points": [
                {
                    "metric": "step_time_ms",
                    "unit": "ms",
                    "samples": [rng.gauss(mean, 2.0) for _ in range(20)],
                },
                {
                    "metric": "tokens_per_s",
                    "unit": "1/s",
                    "direction": "higher_is_better",
                    "value": 4_000_000 / mean,
                },
            ],
        }
        response = api.post("/metrics", json=doc)
        assert response.status_code == 200, response.text


def test_board_series_and_runs_pages(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    _seed(perfdash_server)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.goto(perfdash_server.base_url + "/slas")
    board = page.frame_locator("#slas-frame")
    tiles = board.locator(".sla-tile")
    expect(tiles).to_have_count(3, timeout=30_000)
    expect(board.locator(".sla-tile.sla-pass")).to_contain_text("step p95")
    expect(board.locator(".sla-tile.sla-fail")).to_contain_text("throughput")
    expect(board.locator(".sla-tile.sla-none")).to_contain_text("peak memory")
    expect(page.locator("#slas-summary")).to_contain_text("1 fail")
    spark = board.locator(".sla-tile.sla-pass img.sla-spark")
    expect(spark).to_have_attribute("title", re.compile(f"^last {RUNS} values"))
    page.screenshot(path=artifacts / "sla_board.png", full_page=True)

    board.locator(".sla-tile.sla-pass").click()
    expect(page).to_have_url(
        f"{perfdash_server.base_url}/series?project=llm-train&"
        "benchmark=gpt-small&metric=step_time_ms"
    )
    graph = page.locator("#series-graph .js-plotly-plot")
    expect(graph.locator(".scatterlayer .trace")).to_have_count(3, timeout=30_000)
    expect(graph.locator(".scatterlayer .trace .points path")).to_have_count(RUNS)
    expect(page.locator(".series-changes")).to_contain_text(f"at commit {SHIFT_AT:02d}abcdef")
    expect(page.get_by_role("link", name="compare traces")).to_have_attribute(
        "href", f"/compare?a=trace{SHIFT_AT - 1:03d}&b=trace{SHIFT_AT:03d}"
    )
    page.screenshot(path=artifacts / "sla_series.png", full_page=True)

    page.goto(perfdash_server.base_url + "/runs")
    rows = page.locator(".runs-table tbody tr")
    expect(rows).to_have_count(RUNS)
    expect(rows.first.locator(".run-chip-fail")).to_contain_text("throughput: fail")
    page.screenshot(path=artifacts / "sla_runs.png", full_page=False)
    assert page_errors.messages == []

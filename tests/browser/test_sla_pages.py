"""The SLA board, a series and the runs page, after real pushes through the HTTP API.

A token is made with `perfdash token create` on the server's own data dir; SLAs and points
go in over HTTP as CI would send them; headless Chromium reads the pages.
"""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml
from playwright.sync_api import Page, expect

from dashboard.components.sla_tile import fmt_value
from tests.browser.conftest import perfdash

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]
REPO = Path(__file__).resolve().parents[2]
RUNS = 30
SHIFT_AT = 20
PASSWORD = "a long test password"


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
    expect(board.locator(".sla-tile.sla-fail .sla-threshold")).to_have_text(" ≥ 45,000")
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


STEP_AT = 12  # 1-based: the first of 30 pushes at a level 15% slower


def _sha(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def _seed_step(server: Server) -> None:
    """A regression and a relative SLA, and 30 pushes with a 15% step at push 12."""
    api = httpx.Client(
        base_url=server.base_url + "/api/v1",
        headers={"Authorization": f"Bearer {_token(server)}"},
        timeout=30,
    )
    base = {"project": "llm", "benchmark": "train", "metric": "step_time_ms"}
    slas = [
        {**base, "name": "step regression", "rule": "regression", "tolerance_pct": 5},
        {**base, "name": "step vs main", "rule": "relative", "tolerance_pct": 5,
         "severity": "critical"},
    ]  # fmt: skip
    assert api.post("/slas/apply", json=slas).status_code == 200
    rng = random.Random(20)
    for i in range(1, 31):
        mean = 100.0 if i < STEP_AT else 115.0
        doc = {
            "project": "llm",
            "benchmark": "train",
            "commit": _sha(i),
            "branch": "main",
            "run_id": f"ci-{i}",
            "timestamp": f"2026-11-01T10:{i:02d}:00Z",
            "points": [
                {
                    "metric": "step_time_ms",
                    "unit": "ms",
                    "samples": [rng.gauss(mean, 1.0) for _ in range(9)],
                }
            ],
        }
        assert api.post("/metrics", json=doc).status_code == 200


def _check_board_evidence(server: Server, page: Page, first_bad: str) -> None:
    """Both failing tiles show the baseline of their newest evaluation (as the evaluations
    route gives it) and the regression its first bad commit, the step the seed put in; a
    warning and a critical failure are coloured apart."""
    board = page.frame_locator("#slas-frame")
    api = httpx.Client(base_url=server.base_url + "/api/v1", timeout=30,
                       headers={"Authorization": f"Bearer {_token(server)}"})  # fmt: skip
    slas = {s["name"]: s for s in api.get("/slas").json()["items"]}
    for name in ("step regression", "step vs main"):
        newest = api.get(f"/slas/{slas[name]['id']}/evaluations", params={"limit": 1}).json()[0]
        tile = board.locator(".sla-tile", has_text=name)
        expect(tile).to_have_attribute("data-status", "fail", timeout=30_000)
        expect(tile.locator(".sla-evidence")).to_contain_text(
            f"baseline {fmt_value(newest['baseline'])}"
        )
    regression = board.locator(".sla-tile", has_text="step regression")
    expect(regression.locator(".sla-commit")).to_have_text(first_bad[:10])
    expect(regression.locator(".sla-commit")).to_have_attribute("title", first_bad)
    expect(regression.locator(".sla-status")).to_have_text("FAIL · WARNING")
    relative = board.locator(".sla-tile", has_text="step vs main")
    expect(relative.locator(".sla-threshold")).to_contain_text("≤ ")  # step time: lower wins
    colours = {
        name: board.locator(".sla-tile", has_text=name).evaluate(
            "(e) => getComputedStyle(e).backgroundColor"
        )
        for name in ("step regression", "step vs main")
    }
    assert colours["step regression"] != colours["step vs main"], colours


def test_empty_pages_say_what_to_do_and_their_examples_apply(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """The empty SLA board and Benchmarks page show code as code (no literal backticks),
    link the API docs, and the example each shows is accepted by the API as it stands."""
    base = perfdash_server.base_url
    headers = {"Authorization": f"Bearer {_token(perfdash_server)}"}
    pages = (("/slas", "#slas-empty", "/api/v1/slas/apply"),
             ("/benchmarks", "#benchmarks-empty", "/api/v1/benchmarks"))  # fmt: skip
    for path, box, post in pages:
        page.goto(base + path)
        guide = page.locator(box)
        expect(guide).to_contain_text("From the browser")
        assert "`" not in str(guide.text_content())
        link = guide.get_by_role("link", name="API docs")
        assert str(link.get_attribute("href")).startswith("/docs#/")
        example = yaml.safe_load(str(guide.locator("pre").text_content()))
        page.screenshot(path=artifacts / f"empty{path.replace('/', '_')}.png", full_page=True)
        items = next(iter(example.values()))
        bodies = [items] if path == "/slas" else items
        for body in bodies:
            answer = httpx.post(base + post, json=body, headers=headers, timeout=30)
            assert answer.status_code in (200, 201), answer.text
    assert httpx.get(f"{base}/docs", timeout=10).status_code == 200
    assert page_errors.messages == []


def test_series_shows_the_first_bad_commit_and_an_admin_accepts_the_new_level(
    serve_with: Callable[..., Server], page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    server = serve_with("--no-worker", auth="password", scrypt_n="1024")
    perfdash(server, "user", "add", "ada", "--role", "admin", "--password-env", "PW", PW=PASSWORD)
    _seed_step(server)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(server.base_url + "/login?next=%2Fslas")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.base_url + "/slas")
    first_bad = _sha(STEP_AT)
    _check_board_evidence(server, page, first_bad)
    page.screenshot(path=artifacts / "sla_board_regression.png", full_page=True)
    page.goto(server.base_url + "/series?project=llm&benchmark=train&metric=step_time_ms")

    expect(page.locator(".series-changes")).to_contain_text(f"at commit {first_bad}")
    expect(page.locator(".series-changes .series-worse")).to_have_text(" first bad commit")
    expect(page.locator(".series-slas")).to_contain_text(
        f"step regression (regression): fail · first bad commit {first_bad}"
    )
    graph = page.locator("#series-graph .js-plotly-plot")
    expect(graph.locator(".annotation-text").first).to_contain_text(
        f"at first bad commit {first_bad[:8]}"
    )

    page.locator("#series-accept-sla").click()
    page.get_by_role("option", name="step vs main").click()
    page.locator("#series-accept-reason").fill("bf16 attention: slower, needed for accuracy")
    page.get_by_role("button", name="Accept as new baseline").click()
    expect(page.locator("#series-accept-result .notice-success")).to_have_text(
        f"Commit {first_bad} is the new baseline of step vs main."
    )
    accepted = page.locator(".series-acceptances")
    expect(accepted).to_contain_text(
        f"step vs main: commit {first_bad} accepted as the baseline by user 'ada' at 20"
    )
    expect(accepted).to_contain_text("bf16 attention: slower, needed for accuracy")
    expect(graph.locator(".annotation-text", has_text="accepted by user 'ada'")).to_have_count(1)
    page.screenshot(path=artifacts / "series_accepted_baseline.png", full_page=True)
    assert page_errors.messages == []

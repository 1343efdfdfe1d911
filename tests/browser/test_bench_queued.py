"""A run nobody can take, as the Benchmarks pages show it: `perfdash serve` has only its
CPU worker, so a run on the `gpu` queue waits; the list says why and for how long, and the
spec's page warns on "Run now" too and shows its runs as not started."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]
SPEC = {"name": "copy-small", "workload": "copy", "sweep": {"size_bytes": [4096]}}
WARNING = "no runner on queue gpu; start `perfdash worker --queues gpu` on a GPU host"


def test_a_run_with_no_runner_shows_the_warning_and_its_wait(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = perfdash_server.base_url
    assert httpx.post(f"{base}/api/v1/benchmarks", json=SPEC).status_code == 200
    queued = httpx.post(f"{base}/api/v1/benchmarks/copy-small/runs").json()
    assert queued["warnings"] == [WARNING]

    page.goto(base + "/benchmarks")
    row = page.locator(f'tr[data-queued="{queued["id"]}"]')
    expect(row).to_contain_text(WARNING)
    expect(row.locator(".bench-waited")).to_have_text(re.compile(r"^\d+ s$|^\d+ min \d+ s$"))
    spec_row = page.locator('tr[data-spec="copy-small"]')
    expect(spec_row).to_contain_text(re.compile(r"queued for \d+ s"))

    spec_row.get_by_role("button", name="Run now").click()
    expect(page.locator("#benchmarks-status .notice-success")).to_contain_text("Queued a run")
    expect(page.locator("#benchmarks-status .notice-warning")).to_have_text(WARNING)
    expect(page.locator("tr[data-queued]")).to_have_count(2)
    page.screenshot(path=artifacts / "bench_no_runner.png", full_page=True)

    # The spec's own page warns the same way, and its runs, never taken, did not start.
    page.goto(base + "/benchmarks/copy-small")
    page.get_by_role("button", name="Run now").click()
    expect(page.locator("#bench-spec-status .notice-success")).to_contain_text("Queued a run")
    expect(page.locator("#bench-spec-status .notice-warning")).to_have_text(WARNING)
    runs = httpx.get(f"{base}/api/v1/benchmarks/copy-small/runs").json()["items"]
    assert len(runs) == 3 and all(r["started_at"] is None for r in runs)
    for run in runs:
        started = page.locator(f'tr[data-run="{run["id"]}"] .bench-not-started')
        expect(started).to_have_text("not started")
        expect(started).to_have_attribute("title", re.compile(r"^queued \d{4}-\d\d-\d\d"))
    page.screenshot(path=artifacts / "bench_spec_no_runner.png", full_page=True)
    assert page_errors.messages == []

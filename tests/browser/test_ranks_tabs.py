"""The Steps and Ranks tabs in headless Chromium on the real 2-rank DDP job (two H200s):
bars drawn with data, the slowest step marked, the collectives and copies tables filled.
Screenshots go to `test-artifacts/steps_ddp.png` and `ranks_ddp.png`."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DATA = Path(__file__).resolve().parents[1] / "data"
DDP = [DATA / "ddp" / f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
TORCH = DATA / "torch" / "h200_train_step.pt.trace.json.gz"
expect.set_options(timeout=30_000)


def _ddp(server: Server) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for path in DDP:
            tf.add(path, f"run/{path.name}")
    return str(upload_and_wait(server, buf.getvalue(), "ddp.tar.gz")["id"])


def test_steps_and_ranks_tabs_on_the_ddp_job(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = _ddp(module_server)
    page.goto(f"{base}/traces/{tid}")
    page.locator("#trace-detail-tab-steps").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=steps")
    bars = page.locator("#trace-steps-chart .bars .point path")
    expect(bars.first).to_be_visible()
    assert bars.count() >= 8 * 2  # 4 steps x 2 ranks, several categories each
    expect(page.locator("#trace-steps-spread")).to_contain_text("Slowest step")
    expect(page.locator("#trace-steps-table")).to_contain_text("slowest")
    expect(page.locator("#trace-steps-table")).to_contain_text("rank 1")
    page.screenshot(path=artifacts / "steps_ddp.png", full_page=True)
    page.locator("#trace-steps-window-gpu").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=steps&window=gpu")
    expect(page.locator("#trace-steps-window-gpu")).to_have_class("tab-link tab-active")
    expect(page.locator("#trace-steps-chart .bars .point path").first).to_be_visible()
    page.screenshot(path=artifacts / "steps_ddp_gpu.png", full_page=True)

    page.goto(f"{base}/traces/{tid}?tab=ranks")
    expect(page.locator("#trace-ranks-chart .bars .point path").first).to_be_visible()
    expect(page.locator("#trace-ranks-table")).to_contain_text("rank 0")
    expect(page.locator("#trace-ranks-collectives")).to_contain_text("allreduce")
    expect(page.locator("#trace-ranks-collectives")).to_contain_text("allreduce · Float · RING/LL")
    expect(page.locator("#trace-ranks-copy-tiles")).to_contain_text("Pinned")
    page.screenshot(path=artifacts / "ranks_ddp.png", full_page=True)

    one = str(upload_and_wait(module_server, TORCH.read_bytes(), TORCH.name)["id"])
    page.goto(f"{base}/traces/{one}?tab=ranks")
    expect(page.locator("#trace-ranks-single")).to_contain_text("Single-rank")
    page.screenshot(path=artifacts / "ranks_single.png", full_page=True)
    assert page_errors.messages == []

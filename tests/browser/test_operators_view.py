"""The Operators tab in headless Chromium, on a real H200 trace and on a trace with Python
frames: the table has rows, a selected op shows its kernels, grouping and search go in the
URL, and the icicle draws where frames exist. Screenshots go to `test-artifacts/`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait
from tests.views.kineto_builder import document

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
GPT = REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
STACKS = REPO / "tests" / "data" / "torch" / "h200_ops_stack.pt.trace.json.gz"
TIMEOUT_MS = 30_000
NAMES = '#trace-operators-grid .ag-cell[col-id="name"]'
expect.set_options(timeout=TIMEOUT_MS)


def test_operators_tab_on_an_h200_trace(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = str(upload_and_wait(module_server, GPT.read_bytes(), GPT.name)["id"])
    page.goto(f"{base}/traces/{tid}")
    page.locator("#trace-detail-tab-operators").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=operators")
    expect(page.locator(NAMES).first).to_be_visible()
    expect(page.locator(NAMES)).to_have_count(20)  # one page of the grid
    expect(page.locator("#trace-operators-kernels")).to_contain_text("Kernels launched by")
    expect(page.locator("#trace-operators-no-stacks")).to_contain_text("with_stack")

    page.locator("#trace-operators-search").fill("aten::mm")
    page.locator("#trace-operators-search").press("Enter")
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=operators&q=aten%3A%3Amm")
    expect(page.locator(NAMES).first).to_have_text("aten::mm")
    page.locator(NAMES).first.click()
    expect(page.locator("#trace-operators-kernels")).to_contain_text("Kernels launched by aten::mm")
    expect(page.locator("#trace-operators-kernels td").first).to_be_visible()
    page.screenshot(path=artifacts / "operators_gpt_small.png", full_page=True)

    page.goto(f"{base}/traces/{tid}?tab=operators&group=shape")
    expect(
        page.locator('#trace-operators-grid .ag-header-cell[col-id="input_shapes"]')
    ).to_be_visible()
    expect(page.locator(NAMES).first).to_be_visible()
    page.screenshot(path=artifacts / "operators_gpt_small_by_shape.png", full_page=True)
    assert page_errors.messages == []


def _py(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


def _op(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


def _stack_trace() -> tuple[bytes, str]:
    """The H200 fixture recorded with with_stack/with_modules when present; else a small
    hand-built one with the same kinds of events."""
    if STACKS.exists():
        return STACKS.read_bytes(), STACKS.name
    events = []
    for t in (0.0, 1000.0):
        events += [
            _py("train.py(10): <module>", t, 900.0),
            _py("nn.Module: Net_0", t + 10, 600.0),
            _py("nn.Module: Linear_0", t + 20, 300.0),
            _op("aten::linear", t + 30, 250.0),
            _py("nn.Module: GELU_0", t + 330, 200.0),
            _op("aten::gelu", t + 340, 150.0),
            _op("aten::zeros", t + 700, 100.0),
        ]
    return document(events), "stacks.pt.trace.json"


def test_icicle_draws_stacks_and_modules(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    content, name = _stack_trace()
    tid = str(upload_and_wait(module_server, content, name)["id"])
    page.goto(f"{module_server.base_url}/traces/{tid}?tab=operators")
    expect(page.locator("#trace-operators-stacks-icicle path.surface").first).to_be_attached()
    expect(page.locator("#trace-operators-modules-icicle path.surface").first).to_be_attached()
    assert page.locator("#trace-operators-stacks-icicle path.surface").count() >= 3
    page.screenshot(path=artifacts / "operators_stacks.png", full_page=True)
    if STACKS.exists():  # the real trace: an op's Python call sites under its kernels
        page.locator("#trace-operators-search").fill("aten::linear")
        page.locator("#trace-operators-search").press("Enter")
        expect(page.locator(NAMES).first).to_have_text("aten::linear")
        page.locator(NAMES).first.click()
        sites = page.locator("#trace-operators-call-stacks")
        expect(sites).to_contain_text("nn.Module: Linear_0")
        page.screenshot(path=artifacts / "operators_call_stacks.png", full_page=True)
    assert page_errors.messages == []

"""The benchmark pages as a user clicks them, with a real GPU-queue worker on the CPU.

`perfdash serve` (API, pages, ingest worker) plus `perfdash worker --queues gpu`: a spec
is stored through the API, "Run now" is clicked on /benchmarks, the badge turns
succeeded by itself, and the run page shows the metrics, a samples histogram and the
environment; the spec page draws the scaling curve of the sweep.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import _spawn, _stop

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytest.importorskip("torch")
pytestmark = [pytest.mark.browser, pytest.mark.integration]
RUN_TIMEOUT_MS = 120_000
SPEC = {
    "name": "copy-sweep",
    "description": "device copy, swept over size",
    "workload": "copy",
    "sweep": {"size_bytes": [4096, 65536, 1048576]},
    "warmup": 1,
    "iters": 5,
}


@pytest.fixture
def gpu_worker(perfdash_server: Server, tmp_path: Path) -> Iterator[None]:
    """A `perfdash worker --queues gpu --concurrency 1` on the server's data dir."""
    args = ["worker", "--queues", "gpu", "--concurrency", "1"]
    proc = _spawn(args, perfdash_server.env, tmp_path / "gpu-worker.log")
    yield
    _stop(proc)


def test_rerun_from_the_page_then_read_the_run(
    perfdash_server: Server,
    gpu_worker: None,
    page: Page,
    page_errors: PageErrors,
    artifacts: Path,
) -> None:
    base = perfdash_server.base_url
    assert httpx.post(f"{base}/api/v1/benchmarks", json=SPEC).status_code == 200
    page.goto(base + "/benchmarks")
    row = page.locator('tr[data-spec="copy-sweep"]')
    expect(row).to_contain_text("never run")
    expect(page.locator("#benchmarks-runners")).to_contain_text("gpu", timeout=60_000)

    row.get_by_role("button", name="Run now").click()
    expect(page.locator("#benchmarks-status .notice-success")).to_contain_text("Queued a run")
    expect(row.locator(".badge")).to_have_text("succeeded", timeout=RUN_TIMEOUT_MS)
    page.screenshot(path=artifacts / "bench_list_cpu.png", full_page=True)

    row.locator(".badge").click()
    expect(page.locator(".page-title")).to_contain_text("copy-sweep · run")
    point = page.locator('[data-point="size_bytes=1048576"]')
    expect(point.locator('tr[data-metric="bandwidth_gbps"]')).to_contain_text("GB/s")
    expect(point.locator('tr[data-metric="time_ms"] td').last).to_have_text("5")
    expect(point.locator(".js-plotly-plot .bars .point path").first).to_be_visible()
    expect(page.locator("#bench-run-hash")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    expect(page.locator(".kv-table").last).to_contain_text("torch")
    page.screenshot(path=artifacts / "bench_run_cpu.png", full_page=True)

    page.get_by_role("link", name="← copy-sweep").click()
    curve = page.locator("#bench-spec-scaling .js-plotly-plot .scatterlayer .trace")
    expect(curve).to_have_count(1, timeout=30_000)
    expect(page.locator("tr[data-run]")).to_have_count(1)
    page.screenshot(path=artifacts / "bench_spec_cpu.png", full_page=True)
    assert page_errors.messages == []


def test_run_page_shows_flags_and_the_gpu_state_chart(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """A run whose GPU state is the H200 probe's sustained GEMM (stored by
    `perf/gpu_guard/probe_run.py`: the real monitor, flags and finish_run on the probe's
    NVML samples): badges with the reason, and the clock/power/temperature chart."""
    repo = Path(__file__).resolve().parents[2]
    env = {**perfdash_server.env, "PYTHONPATH": str(repo)}
    seeded = subprocess.run([sys.executable, str(repo / "perf/gpu_guard/probe_run.py")], env=env,
                            capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    run_id = seeded.stdout.split()[-1]
    page.goto(f"{perfdash_server.base_url}/benchmark-runs/{run_id}")
    flags = page.locator("#bench-run-flags")
    expect(flags.locator('[data-flag="throttled/sw_power_cap"]')).to_have_text(
        "throttled · sw_power_cap · gpu0"
    )
    expect(flags.locator('[data-flag="throttled/low_clock"]')).to_be_visible()
    expect(flags.locator('[data-flag="unlocked/boost_clocks"]')).to_be_visible()
    card = page.locator("#bench-run-gpu-state")
    expect(card).to_contain_text("sw_power_cap in 99.6% of 1500 samples")
    expect(card.locator(".gpu-summary")).to_contain_text("1,455")  # the probe's median SM clock
    chart = card.locator(".gpu-state-chart .js-plotly-plot")
    expect(chart.locator(".subplot")).to_have_count(3)
    expect(chart.locator(".scatterlayer .trace")).to_have_count(4)  # 3 lines + slowdown dots
    card.screenshot(path=artifacts / "bench_run_gpu_state.png")
    assert page_errors.messages == []

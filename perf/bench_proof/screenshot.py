"""Screenshot the benchmark pages of a perfdash that holds the H200 proof's database.

gunzip -c perfdash.db.gz > VAR/perfdash.db
PERFDASH_DATA_DIR=VAR perfdash serve --no-worker --no-samples --port 8799 &
python perf/bench_proof/screenshot.py http://127.0.0.1:8799 test-artifacts/
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright


def main() -> int:
    """Open the list, a spec page with its scaling curve, and two run pages."""
    base, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    runs = httpx.get(f"{base}/api/v1/benchmark-runs", params={"limit": 50}).json()["items"]
    train = next(r for r in runs if r["spec_name"] == "train-step")
    gemm = next(r for r in runs if r["spec_name"] == "gemm-bf16")
    pages = {
        "bench_list": "/benchmarks",
        "bench_spec_sdpa": "/benchmarks/sdpa-bf16",
        "bench_run_train_step": f"/benchmark-runs/{train['id']}",
        "bench_run_gemm": f"/benchmark-runs/{gemm['id']}",
    }
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                     args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        for name, path in pages.items():
            page.goto(base + path)
            page.wait_for_selector(".card", timeout=30_000)
            page.wait_for_timeout(1500)
            page.screenshot(path=str(out / f"{name}.png"), full_page=True)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time to interactive of the trace page's tabs for a 246k-event trace, in headless Chromium.

Run: `python perf/bench_trace_page.py [--trace PATH] [--runs 5]`. It starts a real
`perfdash serve` (SQLite, embedded broker, one worker) on a fresh data dir, uploads the
trace and waits for `ready`, then opens each view in Debian's Chromium and takes the time
from navigation to the view's chart drawn with data (the selector below visible). Each
view is opened `--runs` times in a fresh browser context (no cache); the median is kept.
The anchor is the issue's budget, 2 s; the ratio is time / 2 s. It also times each API
call the views make, so a slow view can be traced to its endpoint.

Input: `perf/data/h200_gpt_12l.pt.trace.json.gz` (a real H200 trace of a 12-layer GPT,
246k events, record_shapes and profile_memory on; made by tests/data/make_transformer_trace.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from _bench import stop_process_group
from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz"
BUDGET_S = 2.0
VIEWS = {
    "overview": ("", "#trace-detail-kernels-chart .bars .point path"),
    "kernels": ("?tab=kernels", '#trace-kernels-table td[data-dash-column="label"]'),
    "kernels, grouped by CPU op": (
        "?tab=kernels&group=cpu_op",
        '#trace-kernels-table td[data-dash-column="label"]',
    ),
    "roofline": ("?tab=roofline", "#trace-roofline-chart .scatterlayer .points path"),
    "memory": ("?tab=memory", "#trace-memory-chart .scatterlayer .js-line"),
}
TAB_LINKS = {
    "kernels": "#trace-detail-tab-kernels",
    "roofline": "#trace-detail-tab-roofline",
    "memory": "#trace-detail-tab-memory",
}
ENDPOINTS = ("", "/summary", "/kernels?limit=50", "/findings", "/roofline", "/memory")


def _serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env["PERFDASH_DATA_DIR"] = str(data_dir)
    cmd = [
        str(Path(sys.executable).with_name("perfdash")),
        "serve",
        "--port",
        str(port),
        "--no-samples",
    ]
    log = (data_dir.parent / "serve.log").open("wb")
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit("perfdash serve did not become healthy")


def _ingest(base: str, trace: Path) -> str:
    r = httpx.post(
        f"{base}/api/v1/traces", files={"file": (trace.name, trace.read_bytes())}, timeout=120
    )
    trace_id = str(r.json()["id"])
    while (t := httpx.get(f"{base}/api/v1/traces/{trace_id}", timeout=10).json())["status"] not in (
        "ready",
        "failed",
    ):
        time.sleep(0.5)
    if t["status"] != "ready":
        raise SystemExit(f"ingest failed: {t['error']}")
    return trace_id


def _open(page: Page, url: str, selector: str) -> float:
    start = time.perf_counter()
    page.goto(url)
    page.locator(selector).first.wait_for(state="attached", timeout=60_000)
    return time.perf_counter() - start


def _time_views(base: str, trace_id: str, runs: int) -> dict[str, dict[str, list[float]]]:
    """Per view: `cold` in a fresh context (no cache: bundles and Plotly load), `warm` opened
    again in the same context (cached bundles, as when a user comes back), and `tab` when
    reached by clicking its tab from the overview (in-app navigation, no page load)."""
    out: dict[str, dict[str, list[float]]] = {n: {"cold": [], "warm": [], "tab": []} for n in VIEWS}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(runs):
            for name, (query, selector) in VIEWS.items():
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                url = f"{base}/traces/{trace_id}{query}"
                out[name]["cold"].append(_open(page, url, selector))
                out[name]["warm"].append(_open(page, url, selector))
                tab = TAB_LINKS.get(name)
                if tab:
                    _open(page, f"{base}/traces/{trace_id}", VIEWS["overview"][1])
                    start = time.perf_counter()
                    page.locator(tab).click()
                    page.locator(selector).first.wait_for(state="attached", timeout=60_000)
                    out[name]["tab"].append(time.perf_counter() - start)
                context.close()
        browser.close()
    return out


def _time_api(base: str, trace_id: str, runs: int) -> dict[str, float]:
    times = {}
    for path in ENDPOINTS:
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            httpx.get(f"{base}/api/v1/traces/{trace_id}{path}", timeout=60).raise_for_status()
            samples.append(time.perf_counter() - start)
        times[path or "/ (trace)"] = statistics.median(samples)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = _serve(Path(tmp) / "var")
        try:
            start = time.perf_counter()
            trace_id = _ingest(base, args.trace)
            ingest_s = time.perf_counter() - start
            counts = httpx.get(f"{base}/api/v1/traces/{trace_id}").json()["event_counts"]
            views = _time_views(base, trace_id, args.runs)
            api = _time_api(base, trace_id, args.runs)
        finally:
            stop_process_group(proc)
    print(
        f"{datetime.now(UTC):%Y-%m-%d} {platform.machine()} {os.cpu_count()} cores; "
        f"{args.trace.name}: {sum(counts.values()):,} events, ingest {ingest_s:.1f} s"
    )
    print(f"load average during the run: {os.getloadavg()[0]:.1f} (1 min)")
    print("| view | cold load (median) | warm load | by tab click | cold vs 2 s |")
    print("|---|---|---|---|---|")
    for name, kinds in views.items():
        med = {k: statistics.median(v) if v else None for k, v in kinds.items()}
        cells = [f"{v:.2f} s" if v is not None else "—" for v in med.values()]
        cold = med["cold"] or 0.0
        print(f"| {name} | {' | '.join(cells)} | {cold / BUDGET_S:.2f}x |")
    print("\n| API call | median |\n|---|---|")
    for path, seconds in api.items():
        print(f"| `{path}` | {seconds * 1000:.0f} ms |")


if __name__ == "__main__":
    main()

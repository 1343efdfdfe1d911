"""Metrics push load and SLA board load, on PostgreSQL through a real `perfdash serve`.

Run: `python perf/bench_metrics.py [--seconds 30] [--threads 4] [--postgres URL]`.

1. Push: `--threads` clients POST 100-point native batches to `/api/v1/metrics` for
   `--seconds`. One batch in five is sent again (a CI retry) and one in twenty is sent from
   two threads at once (a retry racing the original). Reported: sustained stored points/s,
   request latency p50/p99, and a count of rows afterwards against the unique points sent
   (lost = expected - stored, duplicated = rows - unique (run, metric) pairs).
2. Board: 200 SLAs, each with 1,000 evaluations over 1,000 runs, loaded in bulk; then the
   time of `GET /api/v1/slas/board` (what the page's callback calls) and, when Chromium and
   Playwright are present, the time until the `/slas` page shows all 200 tiles.
3. `--sla-cost`: in-process push time (one client) when three SLAs, one of them a
   regression rule (Mann-Whitney U + E-divisive over 60 runs), watch a pushed metric.
4. `--fpr`: the false-positive rate of the change-point detector on noise series.

The target (issue 8): 2,000 points/s with p99 < 100 ms; board < 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _admin(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Server:
    """`perfdash serve --no-worker` on a fresh PostgreSQL database."""

    def __init__(self, pg: str) -> None:
        self.db = f"perfdash_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(_admin(pg), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.db}"')
        self.pg = pg
        self.url = make_url(pg).set(database=self.db).render_as_string(hide_password=False)
        self.tmp = tempfile.TemporaryDirectory()
        self.env = {
            **os.environ,
            "PERFDASH_DATABASE_URL": self.url,
            "PERFDASH_DATA_DIR": self.tmp.name,
        }
        port = _free_port()
        self.base = f"http://127.0.0.1:{port}"
        cmd = [
            sys.executable,
            "-m",
            "workers.cli",
            "serve",
            "--no-worker",
            "--no-samples",
            "--port",
            str(port),
        ]
        self.proc = subprocess.Popen(
            cmd,
            env=self.env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        token = subprocess.run(
            [sys.executable, "-m", "workers.cli", "token", "create", "--scope", "admin"],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        self.headers = {
            "Authorization": f"Bearer {token.stdout.strip()}",
            "Content-Type": "application/json",
        }

    def close(self) -> None:
        os.killpg(self.proc.pid, 15)
        self.proc.wait(timeout=30)
        with psycopg.connect(_admin(self.pg), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        self.tmp.cleanup()


def _batch(n: int, rng: random.Random) -> bytes:
    points = [
        {"metric": f"m{i:03d}", "unit": "ms", "samples": [rng.gauss(10, 1) for _ in range(5)]}
        for i in range(100)
    ]
    doc = {
        "project": "load",
        "benchmark": f"b{n % 50}",
        "commit": f"{n:08x}",
        "branch": "main",
        "run_id": f"run-{n}",
        "points": points,
    }
    return json.dumps(doc).encode()


def bench_push(server: Server, seconds: float, threads: int) -> dict[str, Any]:
    latencies: list[float] = []
    sent: set[int] = set()
    counter = iter(range(10**9))
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    errors: list[str] = []

    def post(client: httpx.Client, body: bytes) -> None:
        t0 = time.perf_counter()
        r = client.post(server.base + "/api/v1/metrics", content=body, headers=server.headers)
        with lock:
            latencies.append(time.perf_counter() - t0)
            if r.status_code != 200:
                errors.append(f"{r.status_code} {r.text[:200]}")

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=30) as client:
            while time.monotonic() < stop:
                with lock:
                    n = next(counter)
                    sent.add(n)
                body = _batch(n, rng)
                if n % 20 == 0:  # a retry racing the original
                    racer = threading.Thread(target=post, args=(httpx.Client(timeout=30), body))
                    racer.start()
                    post(client, body)
                    racer.join()
                else:
                    post(client, body)
                if n % 5 == 0:  # a CI retry after the first answer
                    post(client, body)

    t0 = time.monotonic()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.monotonic() - t0
    engine = create_engine(server.url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM metric_points")).scalar_one()
        pairs = conn.execute(
            text("SELECT count(*) FROM (SELECT DISTINCT run_id, metric FROM metric_points) x")
        ).scalar_one()
    engine.dispose()
    latencies.sort()
    expected = len(sent) * 100
    return {
        "batches_unique": len(sent),
        "requests": len(latencies),
        "errors": errors[:5],
        "error_count": len(errors),
        "wall_s": round(wall, 2),
        "stored_points_per_s": round(rows / wall),
        "sent_points_per_s_incl_retries": round(len(latencies) * 100 / wall),
        "latency_p50_ms": round(latencies[len(latencies) // 2] * 1e3, 1),
        "latency_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1e3, 1),
        "expected_points": expected,
        "stored_points": rows,
        "lost": expected - rows,
        "duplicated": rows - pairs,
    }


def _seed_board(url: str, n_slas: int, n_points: int) -> None:
    """Bulk rows: n_slas SLAs over 20 benchmarks, each with n_points runs and evaluations."""
    from sqlmodel import Session

    from backend.models.metrics import MetricPoint, MetricRun
    from backend.models.slas import Sla, SlaEvaluation, Verdict

    engine = create_engine(url)
    rng = random.Random(1)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with Session(engine) as s:
        slas = [
            Sla(
                name=f"sla-{i:03d}",
                project=f"proj-{i % 4}",
                benchmark=f"bench-{i % 20}",
                metric=f"metric-{i // 20}",
                threshold=10.5,
                status=Verdict.PASS if i % 7 else Verdict.FAIL,
                last_observed=10.0,
                last_threshold=10.5,
                status_changed_at=start,
                sparkline=[rng.gauss(10, 0.3) for _ in range(30)],
            )
            for i in range(n_slas)
        ]
        s.add_all(slas)
        s.commit()
        ids = [sla.id for sla in slas]
    with engine.begin() as conn:
        for b in range(20):
            runs = [
                {
                    "idempotency_key": f"{b}-{r}",
                    "project": f"proj-{b % 4}",
                    "benchmark": f"bench-{b}",
                    "commit": f"{r:08x}",
                    "branch": "main",
                    "run_id": str(r),
                    "url": "",
                    "timestamp": start + timedelta(hours=r),
                    "environment": {"gpu_model": "H200"},
                    "created_at": start,
                }
                for r in range(n_points)
            ]
            conn.execute(insert(MetricRun), runs)
        run_ids = [r[0] for r in conn.execute(text("SELECT id FROM metric_runs ORDER BY id"))]
        for i, sla_id in enumerate(ids):
            b, m = i % 20, i // 20
            mine = run_ids[b * n_points : (b + 1) * n_points]
            conn.execute(
                insert(MetricPoint),
                [
                    {
                        "run_id": rid,
                        "metric": f"metric-{m}",
                        "unit": "ms",
                        "direction": "lower_is_better",
                        "value": v,
                        "n": 1,
                        "p50": v,
                    }
                    for rid in mine
                    for v in [rng.gauss(10, 0.3)]
                ],
            )
            conn.execute(
                insert(SlaEvaluation),
                [
                    {
                        "sla_id": sla_id,
                        "run_id": rid,
                        "commit": "",
                        "verdict": "pass",
                        "observed": rng.gauss(10, 0.3),
                        "threshold": 10.5,
                        "details": {},
                        "created_at": start + timedelta(hours=k),
                    }
                    for k, rid in enumerate(mine)
                ],
            )
    engine.dispose()


def _browser_board_s(base: str, tiles: int) -> float | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path("/usr/bin/chromium").exists():
        return None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        board = page.frame_locator("#slas-frame")
        page.goto(base + "/slas")  # warm-up: Dash bundles cached like a wall screen would
        board.locator(".sla-tile").nth(tiles - 1).wait_for(timeout=60_000)
        t0 = time.perf_counter()
        page.goto(base + "/slas")
        board.locator(".sla-tile").nth(tiles - 1).wait_for(timeout=60_000)
        elapsed = time.perf_counter() - t0
        browser.close()
    return elapsed


def bench_board(server: Server, n_slas: int, n_points: int) -> dict[str, Any]:
    _seed_board(server.url, n_slas, n_points)
    times = []
    for _ in range(6):
        t0 = time.perf_counter()
        r = httpx.get(server.base + "/api/v1/slas/board", timeout=30)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200 and len(r.json()) == n_slas
    browser = _browser_board_s(server.base, n_slas)
    return {
        "slas": n_slas,
        "points_per_sla": n_points,
        "api_board_ms_median_of_5": round(sorted(times[1:])[2] * 1e3, 1),
        "browser_all_tiles_s": None if browser is None else round(browser, 2),
    }


def bench_sla_cost(pg: str) -> dict[str, Any]:
    """In-process push time when three SLAs (absolute, relative, regression) watch a metric."""
    from sqlmodel import Session

    from backend.core.db import make_engine
    from backend.core.migrate import upgrade_database
    from backend.models.slas import Rule, SlaCreate
    from backend.services.metrics.push import push_metrics
    from backend.services.slas.definitions import apply_slas

    db = f"perfdash_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_admin(pg), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
    url = make_url(pg).set(database=db).render_as_string(hide_password=False)
    try:
        upgrade_database(url)
        engine = make_engine(url)
        sel = {"project": "load", "benchmark": "b0", "metric": "m000"}
        with Session(engine) as s:
            apply_slas(
                s,
                [
                    SlaCreate(name="abs", threshold=11, **sel),
                    SlaCreate(name="rel", rule=Rule.RELATIVE, tolerance_pct=3, **sel),
                    SlaCreate(name="reg", rule=Rule.REGRESSION, tolerance_pct=2, **sel),
                ],
            )
        rng, times = random.Random(0), []
        for n in range(120):
            doc = json.loads(_batch(n * 50, rng))
            with Session(engine) as s:
                t0 = time.perf_counter()
                push_metrics(s, doc)
                times.append(time.perf_counter() - t0)
        engine.dispose()
    finally:
        with psycopg.connect(_admin(pg), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    steady = sorted(times[60:])
    return {
        "pushes_after_60_runs": len(steady),
        "median_ms": round(steady[len(steady) // 2] * 1e3, 1),
        "max_ms": round(steady[-1] * 1e3, 1),
    }


def bench_fpr() -> dict[str, float]:
    sys.path.insert(0, str(REPO))
    from backend.services.series.changepoints import e_divisive

    out = {}
    for series, length, seed in ((1000, 50, 1), (300, 100, 2)):
        rng = random.Random(seed)
        hits = sum(
            bool(e_divisive([rng.gauss(100, 2) for _ in range(length)], seed=i))
            for i in range(series)
        )
        out[f"{series}x{length}"] = hits / series
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--postgres", default=os.environ.get("PERFDASH_TEST_POSTGRES_URL", DEFAULT_PG)
    )
    parser.add_argument("--fpr", action="store_true", help="also measure the detector's FPR")
    parser.add_argument("--skip-push", action="store_true")
    parser.add_argument("--sla-cost", action="store_true", help="also time pushes under SLAs")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
    }
    server = Server(args.postgres)
    try:
        if not args.skip_push:
            report["push"] = bench_push(server, args.seconds, args.threads)
            print(json.dumps(report, indent=2), flush=True)
    finally:
        server.close()
    board_server = Server(args.postgres)
    try:
        report["board"] = bench_board(board_server, 200, 1000)
    finally:
        board_server.close()
    if args.sla_cost:
        report["sla_cost"] = bench_sla_cost(args.postgres)
    if args.fpr:
        report["fpr"] = bench_fpr()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

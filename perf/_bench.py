"""Helpers the benchmarks in perf/ share: child processes (so each measurement's peak RSS is
its own), their environment, a scratch PostgreSQL database and a private redis-server; the
real H200 trace, its N-times copies, and the two ingests every torch.profiler benchmark
compares: perfdash end to end and HTA's parse (the anchor).

The benchmarks run as scripts (`python perf/bench_x.py`), so this imports as `_bench`.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz"


def run_child(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run `cmd` from the repo root; its last stdout line is the JSON result."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def perfdash_env(database_url: str, data_dir: Path) -> dict[str, str]:
    """This environment without PERFDASH_* settings, plus a private database and data dir
    with upload/decompression caps big enough for benchmark inputs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    return env | {
        "PERFDASH_DATA_DIR": str(data_dir),
        "PERFDASH_DATABASE_URL": database_url,
        "PERFDASH_MAX_UPLOAD_BYTES": str(8 * 1024**3),
        "PERFDASH_MAX_DECOMPRESSED_BYTES": str(16 * 1024**3),
    }


@contextmanager
def scratch_postgres(url: str, tag: str) -> Iterator[str]:
    """A freshly created database on the server of `url`, dropped afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(url)
    name = f"perfdash_bench_{tag}_{os.getpid()}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    """A memory-only redis-server of this run's own on a free loopback port (the shared one
    has other people's queues); yields its URL (database 0) and stops it afterwards."""
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


PYTHON = sys.executable


def stop_process_group(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """SIGTERM the process's whole group (a server and the workers it spawned), wait up to
    `grace_s` for its leader, then SIGKILL whatever of the group is left (pool children
    that outlive their parent). A group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


_PERFDASH_CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
path = Path(sys.argv[1])
import backend.core.queue as queue
from sqlmodel import Session
from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.migrate import upgrade_database
from backend.services.loading.pipeline import ingest_trace
from backend.services.traces.lifecycle import accept_upload
queue.enqueue = lambda *a, **k: None  # measure the ingest, not the broker
upgrade_database()
settings, engine = get_settings(), get_engine()
t0 = time.perf_counter()
with Session(engine) as session, path.open("rb") as f:
    trace, _ = accept_upload(session=session, settings=settings, stream=f, name=path.name,
                             project="bench")
status = ingest_trace(engine=engine, settings=settings, trace_id=trace.id)
elapsed = time.perf_counter() - t0
with Session(engine) as session:
    from backend.models import Trace
    row = session.get(Trace, trace.id)
    events = sum(row.event_counts.values())
print(json.dumps({"seconds": elapsed, "status": str(status), "events": events,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_HTA_CHILD = r"""
import json, resource, sys, time, logging
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
elapsed = time.perf_counter() - t0
rows = sum(len(analysis.t.get_trace(r)) for r in analysis.t.get_ranks())
print(json.dumps({"seconds": elapsed, "rows": rows,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def scaled_trace(scale: int) -> Path:
    """The base trace with its events repeated `scale` times, shifted by its span each time."""
    if scale == 1:
        return TRACE
    out = TRACE.with_name(TRACE.name.replace(".pt.trace", f".x{scale}.pt.trace"))
    if out.exists():
        return out
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    events = doc.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), int | float)]
    lo = min(e["ts"] for e in timed)
    hi = max(e["ts"] + e.get("dur", 0) for e in timed)
    span = hi - lo + 1000.0
    tmp = out.with_suffix(".tmp")
    with gzip.open(tmp, "wt", compresslevel=3) as f:
        f.write("{\n" + "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in doc.items()))
        f.write('  "traceEvents": [\n')
        first = True
        for k in range(scale):
            for e in events:
                copy = dict(e)
                if isinstance(copy.get("ts"), int | float):
                    copy["ts"] = round(copy["ts"] + k * span, 3)
                if k and "id" in copy and isinstance(copy["id"], int):
                    copy["id"] += k * 10_000_000  # keep flow ids unique per copy
                f.write(("" if first else ",\n") + "  " + json.dumps(copy))
                first = False
        f.write("\n  ]\n}\n")
    tmp.rename(out)
    return out


def perfdash_ingest(path: Path, database_url: str, tmp: Path) -> dict[str, Any]:
    """perfdash end to end (blob store, parse, bulk insert, kernel stats, summary, timeline
    index, status `ready`: the real services) into `database_url`, in a fresh process."""
    env = perfdash_env(database_url, tmp / "var")
    return run_child([PYTHON, "-c", _PERFDASH_CHILD, str(path)], env)


def ingest_here(trace: Path, database_url: str, data_dir: Path) -> tuple[str, float]:
    """Store and ingest `trace` in this process (the real blob store and ingest service)
    into `database_url`, migrated first; (trace id, ingest seconds). For benchmarks that
    go on to read the trace in the same process."""
    os.environ["PERFDASH_DATA_DIR"] = str(data_dir)
    os.environ["PERFDASH_DATABASE_URL"] = database_url
    os.environ["PERFDASH_BROKER_URL"] = ""
    from sqlmodel import Session

    from backend.core.config import get_settings
    from backend.core.db import get_engine
    from backend.core.migrate import upgrade_database
    from backend.models import Trace
    from backend.services.loading.pipeline import ingest_trace
    from backend.services.traces.blob_store import put_blob

    get_settings.cache_clear()
    get_engine.cache_clear()
    upgrade_database()
    settings, engine = get_settings(), get_engine()
    with trace.open("rb") as f:
        blob = put_blob(settings.blob_dir, f, max_bytes=1 << 34)
    with Session(engine) as session:
        row = Trace(name=trace.name, blob_sha256=blob.sha256, size_bytes=blob.size_bytes)
        session.add(row)
        session.commit()
        trace_id = row.id
    t = time.perf_counter()
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    return trace_id, time.perf_counter() - t


def hta_parse(path: Path, hta_python: Path, tmp: Path) -> dict[str, Any]:
    """HTA's `TraceAnalysis(trace_dir=...)` parse of `path` as rank 0, with `hta_python`
    (a virtualenv with HolisticTraceAnalysis or its successor `traceinsight`: both are
    imported as `hta`)."""
    folder = tmp / "hta"
    folder.mkdir(exist_ok=True)
    link = folder / "rank0.pt.trace.json.gz"
    link.unlink(missing_ok=True)
    link.symlink_to(path)
    return run_child([str(hta_python), "-c", _HTA_CHILD, str(folder)], dict(os.environ))

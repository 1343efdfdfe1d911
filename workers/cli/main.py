"""The `perfdash` command: the composition root above every package.

`serve` is the one place that mounts the dashboard into the API app and starts a worker
process, so `backend` never imports `dashboard` or `workers`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import subprocess
import sys
from collections.abc import Iterator
from types import FrameType

from backend.core.logs import configure_logging
from backend.core.task_names import CPU_QUEUES
from workers.cli import auth as cli_auth
from workers.cli import benchmarks as cli_benchmarks
from workers.cli import db as cli_db
from workers.cli import ingest as cli_ingest
from workers.cli import metrics as cli_metrics

log = logging.getLogger("perfdash")
# How long the embedded worker gets for a warm shutdown (finishing its running tasks),
# then for a cold one, before it is killed; its tasks are acks_late, so none is lost.
WORKER_WARM_STOP_S = 20.0
WORKER_COLD_STOP_S = 10.0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `perfdash` console script."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    configure_logging()
    result: int = args.handler(args)
    return result


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfdash", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the API, the dashboard and a Celery worker")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-worker", action="store_true", help="do not start a worker process")
    serve.add_argument("--no-samples", action="store_true", help="do not seed sample traces")
    serve.set_defaults(handler=_serve)

    worker = sub.add_parser("worker", help="run a Celery worker")
    worker.add_argument(
        "--queues", default=",".join(CPU_QUEUES), help="comma-separated, e.g. ingest,webhooks,gpu"
    )
    worker.add_argument("--concurrency", type=int, default=None)
    worker.set_defaults(handler=_worker)

    cli_db.register(sub)
    cli_ingest.register(sub)
    cli_metrics.register(sub)
    cli_auth.register(sub)
    cli_benchmarks.register(sub)
    return parser


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from backend.core.bind import UnsafeBindError, check_bind
    from backend.core.config import get_settings
    from backend.core.logs import set_access_log
    from workers.cli.serve import build_app, seed_samples

    try:
        check_bind(args.host, get_settings())
    except UnsafeBindError as e:
        log.error("%s", e)
        return 2
    _prepare_database()
    worker = None if args.no_worker else _spawn_worker()
    try:
        with _stop_signals_exit():
            if not args.no_samples:
                seed_samples()
            # proxy_headers=False: the client address stays the TCP peer, which is what
            # TRUSTED_PROXIES is checked against (uvicorn would replace it by X-Forwarded-For).
            access_log = get_settings().access_log
            set_access_log(access_log)
            uvicorn.run(
                build_app(args.host, args.port),
                host=args.host,
                port=args.port,
                proxy_headers=False,
                access_log=access_log,
            )
    finally:
        if worker is not None:
            _stop_worker(worker)
    return 0


class _StopRequested(Exception):
    """SIGTERM or SIGINT reached `serve`: unwind so that the worker is stopped too."""


@contextlib.contextmanager
def _stop_signals_exit() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into a clean return of `serve`.

    uvicorn shuts down gracefully on either signal, then re-raises it under the handler
    that was there before; with the default SIGTERM handler that kills the process
    before any `finally` runs, which left the embedded worker running.
    """

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise _StopRequested(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except _StopRequested as e:
        log.info("stopping on %s", e)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop_worker(worker: subprocess.Popen[bytes]) -> None:
    """Warm shutdown (SIGTERM), then cold (SIGQUIT: Celery ends its pool), then SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, WORKER_WARM_STOP_S), (signal.SIGQUIT, WORKER_COLD_STOP_S)):
        if worker.poll() is not None:
            return
        worker.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(timeout=wait_s)
    if worker.poll() is None:
        log.warning("the worker did not stop in %.0f s; killing it", WORKER_WARM_STOP_S)
        worker.kill()
        worker.wait()


def _spawn_worker() -> subprocess.Popen[bytes]:
    from backend.core.config import get_settings

    cmd = [
        sys.executable,
        "-m",
        "workers.cli",
        "worker",
        "--queues",
        ",".join(CPU_QUEUES),  # ingest and webhook deliveries
        "--concurrency",
        str(get_settings().embedded_worker_processes),
    ]
    log.info("starting worker: %s", " ".join(cmd))
    return subprocess.Popen(cmd)


def _worker(args: argparse.Namespace) -> int:
    from workers.celery_app import app

    _prepare_database()
    argv = ["worker", "--loglevel=INFO", f"--queues={args.queues}", "--without-gossip"]
    if args.concurrency:
        argv.append(f"--concurrency={args.concurrency}")
    app.worker_main(argv=argv)
    return 0


def _prepare_database() -> None:
    """Migrate (re-ingesting traces from before the columnar store first, with progress)."""
    failed = cli_db.prepare_database()
    if failed:
        log.warning("%d trace(s) could not be re-ingested; their errors are on the traces", failed)

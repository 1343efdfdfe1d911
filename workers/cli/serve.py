"""What `perfdash serve` composes: the API app with the dashboard mounted, and sample data."""

from __future__ import annotations

import logging
from pathlib import Path

from a2wsgi import WSGIMiddleware
from fastapi import FastAPI
from sqlmodel import Session, func, select

import backend
from backend.api.host_check import allowed_hosts
from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.main import create_app
from backend.models import Trace
from backend.services.traces import accept_upload
from dashboard.app import create_dash_app

log = logging.getLogger(__name__)
# Shipped as package data of `backend` (pyproject), so found beside that package.
SAMPLE_DIR = Path(backend.__file__).resolve().parent / "sample_data"


def build_app(host: str, port: int) -> FastAPI:
    """The API plus the Dash pages at `/`, served by one uvicorn process."""
    settings = get_settings()
    api_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    api_url = settings.api_url or f"http://{api_host}:{port}"
    app = create_app(allowed_hosts=allowed_hosts(settings, host))
    dash_app = create_dash_app(api_url=api_url)
    app.mount("/", WSGIMiddleware(dash_app.server))  # type: ignore[arg-type]
    return app


def seed_samples() -> int:
    """On an empty database, queue the bundled sample traces through the normal ingest path."""
    settings = get_settings()
    if not settings.seed_samples:
        return 0
    with Session(get_engine()) as session:
        if session.exec(select(func.count()).select_from(Trace)).one() > 0:
            return 0
        seeded = 0
        for path in sorted(SAMPLE_DIR.glob("*.json.gz")):
            with path.open("rb") as stream:
                accept_upload(
                    session=session,
                    settings=settings,
                    stream=stream,
                    name=f"sample: {path.name.removesuffix('.pt.trace.json.gz')}",
                    project="samples",
                )
            seeded += 1
    log.info("seeded %d sample traces", seeded)
    return seeded

"""Liveness and readiness: the database and the broker must both answer."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from backend.api.deps import SessionDep
from backend.core.queue import check_broker

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(session: SessionDep) -> JSONResponse:
    """Report whether the database and the broker are reachable (503 if either is not)."""
    checks: dict[str, str] = {}
    try:
        session.exec(text("SELECT 1"))  # type: ignore[call-overload]
        checks["database"] = "ok"
    except Exception as e:
        checks["database"] = f"error: {type(e).__name__}: {e}"
    try:
        check_broker()
        checks["broker"] = "ok"
    except Exception as e:
        checks["broker"] = f"error: {type(e).__name__}: {e}"
    healthy = all(v == "ok" for v in checks.values())
    return JSONResponse(status_code=200 if healthy else 503, content={"ok": healthy, **checks})

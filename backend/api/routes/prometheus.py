"""`/metrics`: SLA status gauges in the Prometheus text format, for Grafana/Alertmanager."""

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from backend.api.deps import SessionDep
from backend.services.prometheus import render_sla_metrics

router = APIRouter(tags=["prometheus"])
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", response_class=PlainTextResponse)
def prometheus_metrics(session: SessionDep) -> PlainTextResponse:
    """SLA gauges: perfdash_sla_status (1 pass, 0 fail, -1 no data), observed, threshold."""
    return PlainTextResponse(render_sla_metrics(session), media_type=CONTENT_TYPE)

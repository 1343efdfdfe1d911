"""SQLModel tables and API shapes, one module per noun. Importing this registers all tables."""

from backend.models.api_tokens import ApiToken
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec, Runner
from backend.models.bisects import Bisect
from backend.models.kernel_stats import (
    KernelGroupStatPublic,
    KernelGroupStatRecord,
    KernelStatPublic,
    KernelStatRecord,
    KernelStatsPublic,
)
from backend.models.metrics import MetricPoint, MetricRun
from backend.models.outbox import OutboxMessage
from backend.models.slas import BaselineAcceptance, Sla, SlaEvaluation
from backend.models.traces import (
    Trace,
    TraceAccepted,
    TracePublic,
    TracesPublic,
    TraceStatus,
)
from backend.models.users import LoginSession, User
from backend.models.webhooks import Webhook, WebhookDelivery

__all__ = [
    "ApiToken",
    "BaselineAcceptance",
    "BenchmarkRun",
    "BenchmarkSpec",
    "Bisect",
    "KernelGroupStatPublic",
    "KernelGroupStatRecord",
    "KernelStatPublic",
    "KernelStatRecord",
    "KernelStatsPublic",
    "LoginSession",
    "MetricPoint",
    "MetricRun",
    "OutboxMessage",
    "Runner",
    "Sla",
    "SlaEvaluation",
    "Trace",
    "TraceAccepted",
    "TracePublic",
    "TraceStatus",
    "TracesPublic",
    "User",
    "Webhook",
    "WebhookDelivery",
]

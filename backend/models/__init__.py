"""SQLModel tables and API shapes, one module per noun. Importing this registers all tables."""

from backend.models.events import TraceEvent
from backend.models.kernel_stats import KernelStatPublic, KernelStatRecord, KernelStatsPublic
from backend.models.traces import (
    Trace,
    TraceAccepted,
    TracePublic,
    TracesPublic,
    TraceStatus,
)

__all__ = [
    "KernelStatPublic",
    "KernelStatRecord",
    "KernelStatsPublic",
    "Trace",
    "TraceAccepted",
    "TraceEvent",
    "TracePublic",
    "TraceStatus",
    "TracesPublic",
]

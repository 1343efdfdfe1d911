"""Trace-level summaries computed once while events stream past (owner: trace views, #6).

`SummaryBuilder.add(event)` is called for every event, in file order, and `finish(header)`
returns the JSON-ready `Summary` (see `shape`) stored in `traces.summary`, served by
`GET /api/v1/traces/{id}/summary` and printed by `perfdash ingest --json`.

Public surface: `SummaryBuilder`, `Summary` and its parts, `SUMMARY_VERSION`, `MAX_GAPS`.
"""

from ingest.distribution import Distribution
from ingest.summary.builder import MAX_GAPS, SummaryBuilder
from ingest.summary.shape import (
    SUMMARY_VERSION,
    Collective,
    CommunicationSummary,
    CopyKind,
    DeviceMemory,
    DeviceSummary,
    ExclusiveSplit,
    FusionSummary,
    GpuSummary,
    IdleGap,
    LaunchSummary,
    MemorySeries,
    PhaseMemory,
    Step,
    StepSummary,
    Summary,
    TimeSplit,
    TransferSummary,
)

__all__ = [
    "MAX_GAPS",
    "SUMMARY_VERSION",
    "Collective",
    "CommunicationSummary",
    "CopyKind",
    "DeviceMemory",
    "DeviceSummary",
    "Distribution",
    "ExclusiveSplit",
    "FusionSummary",
    "GpuSummary",
    "IdleGap",
    "LaunchSummary",
    "MemorySeries",
    "PhaseMemory",
    "Step",
    "StepSummary",
    "Summary",
    "SummaryBuilder",
    "TimeSplit",
    "TransferSummary",
]

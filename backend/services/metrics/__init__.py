"""Metric pushes: the accepted document formats, their problems, the push transaction, and the
runs page with its filter facets.
"""

from backend.services.metrics.formats import (
    FORMATS,
    MetricDocumentError,
    ParsedPoint,
    ParsedPush,
    parse_document,
)
from backend.services.metrics.push import PushResult, push_metrics
from backend.services.metrics.runs import facets, list_runs

__all__ = [
    "FORMATS",
    "MetricDocumentError",
    "ParsedPoint",
    "ParsedPush",
    "PushResult",
    "facets",
    "list_runs",
    "parse_document",
    "push_metrics",
]

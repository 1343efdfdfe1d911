"""Small building blocks: a trace's status as a coloured badge, its ingest progress, and a
notice box."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from dash import html
from dash.development.base_component import Component

PENDING = frozenset({"queued", "processing"})


def status_badge(status: str) -> html.Span:
    """A pill coloured by status; pending states pulse so a live table reads as live."""
    pulse = " badge-pulse" if status in PENDING else ""
    return html.Span(status, className=f"badge badge-{status}{pulse}", title=f"status: {status}")


def notice(
    text: str | Sequence[str | Component],
    kind: Literal["error", "info", "success", "warning"] = "info",
    element_id: str | None = None,
) -> html.Div:
    """A one-message box, so errors from the API look the same on every page."""
    attrs: dict[str, Any] = {"id": element_id} if element_id else {}
    return html.Div(text, className=f"notice notice-{kind}", role="status", **attrs)


def progress_bar(progress: dict[str, Any] | None) -> html.Div | None:
    """How far a `processing` trace has got: bytes read of the file and events stored.

    Returns None when the worker has not reported yet, so callers show just the badge.
    """
    if not progress or not progress.get("bytes_total"):
        return None
    fraction = max(0.0, min(1.0, float(progress.get("fraction") or 0.0)))
    label = (
        f"{fraction:.0%} · {progress['bytes_done'] / 1e6:,.1f} of "
        f"{progress['bytes_total'] / 1e6:,.1f} MB · {int(progress.get('events') or 0):,} events"
    )
    return html.Div(
        [
            html.Div(
                html.Div(className="progress-fill", style={"width": f"{fraction * 100:.1f}%"}),
                className="progress-track",
                role="progressbar",
                title=label,
            ),
            html.Div(label, className="progress-label muted small"),
        ],
        className="progress",
    )

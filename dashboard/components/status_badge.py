"""Small building blocks: a trace's status as a coloured badge, and a notice box."""

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

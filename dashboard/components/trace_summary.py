"""A trace's header: name, status, the facts worth a glance, and its error if it failed."""

from __future__ import annotations

from dash import html

from dashboard.api.traces import Trace
from dashboard.components.status_badge import notice, status_badge
from dashboard.format import (
    device_label,
    format_bytes,
    format_count,
    format_duration_ns,
    format_timestamp,
)


def trace_duration(trace: Trace) -> str:
    """Wall time; a file whose events have no real times (Nsight Compute) has none."""
    if (trace.get("meta") or {}).get("timeline") is False:
        return "— (no timeline)"
    return format_duration_ns(trace["duration_ns"])


def _fact(label: str, value: str) -> html.Div:
    return html.Div(
        [html.Div(label, className="fact-label"), html.Div(value, className="fact-value")],
        className="fact",
    )


def _event_chips(counts: dict[str, int]) -> html.Div:
    ordered = sorted(counts.items(), key=lambda kv: -kv[1])
    return html.Div(
        [html.Span([html.B(kind), f" {n:,}"], className="chip") for kind, n in ordered],
        className="chips",
    )


def trace_summary(trace: Trace, id_prefix: str) -> html.Div:
    """Header and facts; a failed trace leads with its error, since that is the news."""
    devices = ", ".join(device_label(d) for d in trace["devices"]) or "—"
    counts = trace["event_counts"]
    children: list[html.Div | html.H1] = [
        html.Div(
            [html.H1(trace["name"], className="page-title"), status_badge(trace["status"])],
            className="title-row",
            id=f"{id_prefix}-title",
        )
    ]
    if trace["status"] == "failed":
        error = trace["error"] or "parsing failed without a message"
        children.append(notice(f"Ingest failed: {error}", "error", f"{id_prefix}-error"))
    children.append(
        html.Div(
            [
                _fact("Format", trace["format"] or "—"),
                _fact("Devices", devices),
                _fact("Duration", trace_duration(trace)),
                _fact("Events", format_count(sum(counts.values())) if counts else "—"),
                _fact("Size", format_bytes(trace["size_bytes"])),
                _fact("Project", trace["project"]),
                _fact("Uploaded", format_timestamp(trace["created_at"])),
            ],
            className="facts",
            id=f"{id_prefix}-facts",
        )
    )
    if counts:
        children.append(_event_chips(counts))
    if trace["skipped_events"] or trace["warnings"]:
        text = f"{trace['skipped_events']:,} events skipped. " + " ".join(trace["warnings"][:3])
        children.append(notice(text.strip(), "warning"))
    return html.Div(children, className="trace-summary")

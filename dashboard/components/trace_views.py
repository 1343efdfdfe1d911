"""Building blocks of the trace page: tab bar, KPI tiles, findings list, phase memory.

Public surface: `tab_bar`, `has_memory_snapshot`, `kpi_grid`, `findings_list`,
`phase_memory_table`, `TABS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from dash import dcc, html

from dashboard.format import format_bytes, format_duration_ns

__all__ = [
    "TABS",
    "findings_list",
    "has_memory_snapshot",
    "kpi_grid",
    "phase_memory_table",
    "tab_bar",
    "tab_href",
]

TABS = (
    ("overview", "Overview"),
    ("kernels", "Kernels"),
    ("operators", "Operators"),
    ("roofline", "Roofline"),
    ("memory", "Memory"),
    ("ranges", "Ranges"),
    ("compile", "Compile"),
    ("steps", "Steps"),
    ("ranks", "Ranks"),
    ("query", "Query"),
    ("memsnap", "Memory snapshot"),
)

JSON = dict[str, Any]


def tab_href(trace_id: str, tab: str, **query: str) -> str:
    """The URL of one tab, carrying its own query (grouping, sort, overlay...)."""
    params = {"tab": tab, **{k: v for k, v in query.items() if v}}
    return f"/traces/{trace_id}?{urlencode(params)}"


def has_memory_snapshot(trace: Mapping[str, Any]) -> bool:
    """Whether the trace is a PyTorch memory snapshot or was uploaded with one."""
    return trace.get("format") == "torch_memory_snapshot" or "memory_snapshot" in (
        trace.get("meta") or {}
    )


def tab_bar(
    trace_id: str, active: str, id_prefix: str, hidden: frozenset[str] = frozenset()
) -> html.Nav:
    """Tabs are links, so each view has a URL and the back button walks through them;
    `hidden` tabs have nothing to show for this trace (the active one is always shown)."""
    links: list[Any] = [
        dcc.Link(
            label,
            href=tab_href(trace_id, key),
            className="tab-link tab-active" if key == active else "tab-link",
            id=f"{id_prefix}-tab-{key}",
        )
        for key, label in TABS
        if key not in hidden or key == active
    ]
    links.append(
        dcc.Link("Timeline ↗", href=f"/traces/{trace_id}/timeline", className="tab-link tab-ext")
    )
    return html.Nav(links, className="tab-bar", role="tablist")


def kpi(label: str, value: str, hint: str | None = None, note: str | None = None) -> html.Div:
    """One number with its label; `hint` is the tooltip saying how it was computed, `note`
    a line shown under the number (where it must be read, not hovered)."""
    parts = [html.Div(label, className="kpi-label"), html.Div(value, className="kpi-value")]
    if note:
        parts.append(html.Div(note, className="kpi-note"))
    return html.Div(parts, className="kpi", title=hint or "")


def kpi_grid(tiles: Sequence[html.Div], element_id: str) -> html.Div:
    """Tiles in a responsive grid."""
    return html.Div(list(tiles), className="kpi-grid", id=element_id)


def findings_list(findings: Sequence[JSON], element_id: str) -> html.Div | html.Ul:
    """Findings in plain words, warnings first; an empty list says nothing stood out."""
    if not findings:
        return html.Div(
            "No rule fired: nothing in this trace crossed a finding's threshold.",
            className="muted",
            id=element_id,
        )
    items = [
        html.Li(f["text"], className=f"finding finding-{f['severity']}", title=f"rule: {f['rule']}")
        for f in findings
    ]
    return html.Ul(items, className="findings", id=element_id)


NO_MEMORY = (
    "Memory was not profiled (torch.profiler's profile_memory=True records the allocator), "
    "so there is no per-phase peak."
)
NO_PHASES = "No forward/backward/optimizer phases were annotated, so there is no per-phase peak."


def phase_memory_table(phases: Sequence[JSON], memory_profiled: bool) -> html.Table | html.Div:
    """Peak allocated and reserved memory per training phase and device; when there is
    none, the part that is really missing: the memory samples, else the phases."""
    if not phases:
        return html.Div(NO_PHASES if memory_profiled else NO_MEMORY, className="muted")
    columns = ("Phase", "Device", "Duration", "Peak allocated", "Peak reserved")
    head = html.Thead(html.Tr([html.Th(c) for c in columns]))
    rows = [
        html.Tr(
            [
                html.Td(p["phase"]),
                html.Td(
                    f"GPU {p['device']}"
                    if p.get("rank") is None
                    else f"rank {p['rank']} · GPU {p['device']}"
                ),
                html.Td(format_duration_ns(p.get("duration_ns")), className="num"),
                html.Td(format_bytes(p.get("peak_allocated_bytes")), className="num"),
                html.Td(format_bytes(p.get("peak_reserved_bytes")), className="num"),
            ]
        )
        for p in phases
    ]
    return html.Table([head, html.Tbody(rows)], className="data-table")

"""The Compile tab: torch.compile phases, frame compiles and recompiles, compile time against
the trace's span, and the compiled regions that ran, as a pure builder from `/compile` JSON.

Public surface: `compile_panel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html

from dashboard.api.compile_view import Compile
from dashboard.components.status_badge import notice
from dashboard.components.trace_views import kpi, kpi_grid
from dashboard.figures.compile import phases_figure
from dashboard.format import format_count, format_duration_ns, format_pct

__all__ = ["compile_panel"]


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], id_: str) -> html.Table:
    body = [html.Tr([html.Td(c) for c in row]) for row in rows]
    return html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)],
                      className="ncu-table", id=id_)  # fmt: skip


def _tiles(c: Compile, prefix: str) -> html.Div:
    frames = ", ".join(str(f) for f in c["recompiled_frames"]) or "none"
    breaks = "—" if c["graph_breaks"] is None else format_count(c["graph_breaks"])
    return kpi_grid([
        kpi("Compile time", format_duration_ns(c["compile_ns"]),
            "Union of the top-level dynamo_timed phases per thread: nested phases count once"),
        kpi("Run time (span)", format_duration_ns(c["run_ns"]),
            "The trace's span: first to last event"),
        kpi("Compile share", format_pct(c["compile_pct"])),
        kpi("Graphs compiled", format_count(c["graphs_compiled"]),
            "Frame compiles (_compile.compile_inner ranges)"),
        kpi("Recompiles", format_count(c["recompiles"]), note=f"frames: {frames}"),
        kpi("Graph breaks (inferred)", breaks,
            "Frames compiled beyond the first: each graph break compiles the rest of the "
            "function as a frame of its own. A second compiled function counts too; "
            "torch._dynamo.utils.counters['graph_break'] is exact."),
    ], f"{prefix}-kpis")  # fmt: skip


def _phases(c: Compile, prefix: str) -> html.Div:
    rows = [[p["name"], format_count(p["count"]), format_duration_ns(p["total_ns"]),
             format_duration_ns(p["self_ns"]), "yes" if p["top_level"] else ""]
            for p in c["phases"]]  # fmt: skip
    title = f"Top {len(c['phases'])} of {c['phase_count']} compile phases"
    return html.Div([
        html.H3(title),
        dcc.Graph(figure=phases_figure([dict(p) for p in c["phases"]]),
                  config={"displaylogo": False}, id=f"{prefix}-phases-chart"),
        _table(("Phase", "Ranges", "Total", "Self", "Top level"), rows, f"{prefix}-phases"),
    ])  # fmt: skip


def _compiles(c: Compile, prefix: str) -> html.Div:
    first = c["compiles"][0]["start_ns"] if c["compiles"] else 0
    rows = [[r["compile_id"] or "?", "—" if r["frame"] is None else str(r["frame"]),
             "recompile" if r["frame_compile"] else "first",
             format_duration_ns(r["start_ns"] - first), format_duration_ns(r["dur_ns"])]
            for r in c["compiles"]]  # fmt: skip
    return html.Div([
        html.H3("Frame compiles"),
        _table(("Compile id", "Frame", "Kind", "Starts at", "Duration"), rows,
               f"{prefix}-compiles"),
    ])  # fmt: skip


def _regions(c: Compile, prefix: str) -> html.Div:
    rows = [[r["name"], format_count(r["count"]), format_duration_ns(r["total_ns"])]
            for r in c["regions"]]  # fmt: skip
    return html.Div([
        html.H3("Compiled code running (run time, not compile time)"),
        _table(("Range", "Calls", "Total"), rows, f"{prefix}-regions") if rows
        else html.P("No compiled region ran in this trace.", className="muted small"),
    ])  # fmt: skip


def compile_panel(body: Compile | None, prefix: str) -> html.Section:
    """The card; a notice when the API failed or the trace shows no torch.compile."""
    head = html.H2("torch.compile")
    if body is None:
        return html.Section([head, notice("Could not load the compile view.", "error")],
                            className="card")  # fmt: skip
    parts: list[Any] = [head, html.P(body["note"], className="muted small")]
    if body["phases"]:
        parts += [_tiles(body, prefix), _phases(body, prefix), _compiles(body, prefix)]
    parts.append(_regions(body, prefix))
    return html.Section(parts, className="card", id=prefix)

"""Pure pieces of the timeline page around the canvas: the gaps table and step options.

Public surface: `gaps_panel`, `step_options`, `GAP_BUTTON`.
"""

from __future__ import annotations

from typing import Any

from dash import html
from dash.development.base_component import Component

from dashboard.api.timeline import Gaps, Step
from dashboard.figures.theme import CATEGORY_COLORS, CATEGORY_LABELS
from dashboard.format import format_count, format_duration_ns

__all__ = ["GAP_BUTTON", "category_legend", "gaps_panel", "step_options"]

GAP_BUTTON = "timeline-gap"


def step_options(steps: list[Step]) -> list[dict[str, Any]]:
    """Dropdown options for "jump to step", valued by step number."""
    return [
        {"label": f"step {s['step']} · {format_duration_ns(s['end_ns'] - s['start_ns'])}",
         "value": s["step"]}
        for s in steps
    ]  # fmt: skip


def gaps_panel(gaps: Gaps) -> Component:
    """The longest GPU idle gaps; each row zooms the timeline to its gap."""
    if not gaps["items"]:
        return html.Div(
            f"No GPU idle gaps of {format_duration_ns(gaps['min_ns'])} or more.", className="muted"
        )
    rows = [
        html.Tr(
            [
                html.Td(
                    html.Button(
                        format_duration_ns(g["dur_ns"]),
                        className="link-button",
                        id={"type": GAP_BUTTON, "index": i},
                    )
                ),
                html.Td(g["label"]),
                html.Td(html.Span(g["cause"], className=f"gap-cause gap-{g['cause']}")),
                html.Td(
                    f"runtime {format_duration_ns(g['cpu_runtime_ns'])} · "
                    f"sync {format_duration_ns(g['cpu_sync_ns'])}",
                    className="muted small",
                ),
            ]
        )
        for i, g in enumerate(gaps["items"])
    ]
    head = html.Tr([html.Th("idle"), html.Th("lane"), html.Th("cause"), html.Th("CPU meanwhile")])
    return html.Div(
        [
            html.Div(
                f"{format_count(gaps['count'])} gaps of at least "
                f"{format_duration_ns(gaps['min_ns'])}; longest {len(rows)} shown.",
                className="muted small",
            ),
            html.Table([html.Thead(head), html.Tbody(rows)], className="timeline-gaps-table"),
            html.Details([html.Summary("How causes are decided"), html.P(gaps["rule"])]),
        ]
    )


def category_legend(id_: str) -> html.Div:
    """What the timeline's colours mean: one swatch per category, in the colour the
    Overview uses for it too (a slice is a shade of its category's colour)."""
    items = []
    for key, label in CATEGORY_LABELS.items():
        swatch = html.Span(className="legend-swatch", style={"background": CATEGORY_COLORS[key]})
        hook: dict[str, Any] = {"data-category": key}
        items.append(html.Span([swatch, label], className="legend-item", **hook))
    return html.Div(items, id=id_, className="timeline-legend", role="list")

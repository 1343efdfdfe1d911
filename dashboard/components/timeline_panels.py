"""Pure pieces of the timeline page: window arithmetic and the side panels.

Public surface: `window_from_relayout`, `around`, `detail_panel`, `gaps_panel`,
`search_panel`, `step_options`, `lanes_for_groups`, `LANE_GROUPS`, `GAP_BUTTON`,
`MATCH_BUTTON`.
"""

from __future__ import annotations

from typing import Any

from dash import html
from dash.development.base_component import Component

from dashboard.api.timeline import EventDetail, Gaps, Lane, SearchResult, Step
from dashboard.figures.timeline import ms_to_ns
from dashboard.format import format_count, format_duration_ns, format_pct, shorten_kernel_name

__all__ = [
    "GAP_BUTTON",
    "LANE_GROUPS",
    "MATCH_BUTTON",
    "around",
    "detail_panel",
    "gaps_panel",
    "lanes_for_groups",
    "search_panel",
    "step_options",
    "window_from_relayout",
]

GAP_BUTTON = "timeline-gap"
MATCH_BUTTON = "timeline-match"
MIN_WINDOW_NS = 1_000


def window_from_relayout(relayout: dict[str, Any] | None, origin: int) -> tuple[int, int] | None:
    """The new x window (ns) from a Plotly relayout event, or None if it did not zoom/pan.

    >>> window_from_relayout({"xaxis.range[0]": 1.0, "xaxis.range[1]": 2.0}, 0)
    (1000000, 2000000)
    >>> window_from_relayout({"xaxis.range": [0.5, 0.75]}, 10)
    (500010, 750010)
    >>> window_from_relayout({"dragmode": "pan"}, 0) is None
    True
    """
    if not relayout:
        return None
    if "xaxis.range[0]" in relayout and "xaxis.range[1]" in relayout:
        lo, hi = relayout["xaxis.range[0]"], relayout["xaxis.range[1]"]
    elif isinstance(relayout.get("xaxis.range"), list):
        lo, hi = relayout["xaxis.range"][:2]
    else:
        return None
    start, end = ms_to_ns(float(lo), origin), ms_to_ns(float(hi), origin)
    return (start, max(end, start + MIN_WINDOW_NS))


LANE_GROUPS = {
    "gpu": "GPU streams",
    "annotations": "Annotations (NVTX, record_function)",
    "cpu": "CPU threads",
}


def lane_group(lane: Lane) -> str:
    """Which toggle a lane belongs to: annotation lanes, then GPU or CPU work."""
    if lane["family"] in ("annotation", "gpu_annotation"):
        return "annotations"
    return "gpu" if lane["group"] == "gpu" else "cpu"


def lanes_for_groups(lanes: list[Lane], groups: list[str] | None) -> list[int] | None:
    """Lane ids of the shown groups, or None when every group is shown (no filter).

    >>> lanes = [{"lane": 1, "family": "gpu", "group": "gpu"},
    ...          {"lane": 2, "family": "cpu", "group": "cpu"},
    ...          {"lane": 3, "family": "annotation", "group": "cpu"}]
    >>> lanes_for_groups(lanes, ["gpu", "cpu"]), lanes_for_groups(lanes, list(LANE_GROUPS))
    ([1, 2], None)
    """
    shown = set(groups if groups is not None else LANE_GROUPS)
    if shown >= set(LANE_GROUPS):
        return None
    return [lane["lane"] for lane in lanes if lane_group(lane) in shown]


def around(start_ns: int, end_ns: int, margin: float = 0.5) -> tuple[int, int]:
    """A window showing [start, end] with `margin` of its length on each side.

    >>> around(100_000, 200_000)
    (50000, 250000)
    """
    pad = max(int((end_ns - start_ns) * margin), MIN_WINDOW_NS)
    return (start_ns - pad, end_ns + pad)


def step_options(steps: list[Step]) -> list[dict[str, Any]]:
    """Dropdown options for "jump to step", valued by step number."""
    return [
        {"label": f"step {s['step']} · {format_duration_ns(s['end_ns'] - s['start_ns'])}",
         "value": s["step"]}
        for s in steps
    ]  # fmt: skip


def _row(label: str, value: Component | str) -> html.Tr:
    return html.Tr([html.Th(label), html.Td(value)])


def _event_rows(prefix: str, event: dict[str, Any] | None) -> list[html.Tr]:
    if event is None:
        return [_row(prefix, "not recorded")]
    name = html.Span(event["name"], className="mono", title=event["name"])
    where = event.get("lane_label") or ""
    return [_row(prefix, name), _row("", f"{format_duration_ns(event['dur_ns'])} · {where}")]


def detail_panel(detail: EventDetail) -> Component:
    """What was clicked: the event, its CPU launch, its args and its kernel's stats."""
    event = detail["event"]
    rows = [
        _row("name", html.Span(event["name"], className="mono timeline-detail-name")),
        _row("kind", event["kind"]),
        _row("duration", format_duration_ns(event["dur_ns"])),
        _row("lane", event.get("lane_label") or "—"),
    ]
    if event["kind"] in ("kernel", "memcpy", "memset"):
        rows += _event_rows("CPU launch", detail["runtime"])  # type: ignore[arg-type]
        rows += _event_rows("from CPU op", detail["cpu_op"])  # type: ignore[arg-type]
    for key, value in sorted((event.get("args") or {}).items()):
        rows.append(_row(key, html.Span(str(value), className="mono")))
    stats = detail["kernel_stats"]
    if stats is not None:
        rows.append(
            _row(
                "kernel stats",
                f"{format_count(stats['count'])} calls · total "
                f"{format_duration_ns(stats['total_ns'])} "
                f"({format_pct(stats['pct'])} of kernel time) · mean "
                f"{format_duration_ns(stats['mean_ns'])} · min "
                f"{format_duration_ns(stats['min_ns'])} · max "
                f"{format_duration_ns(stats['max_ns'])}",
            )
        )
    return html.Table(html.Tbody(rows), className="timeline-detail-table")


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


def search_panel(result: SearchResult) -> Component:
    """Matching names with counts, and the first matches as buttons that zoom there."""
    if not result["names"]:
        return html.Div(f"No event name contains “{result['query']}”.", className="muted")
    names = [
        html.Li(f"{shorten_kernel_name(n['name'], 70)} — {format_count(n['count'])} times")
        for n in result["names"][:5]
    ]
    buttons = [
        html.Button(f"{format_duration_ns(m['end_ns'] - m['start_ns'])}", className="link-button",
                    id={"type": MATCH_BUTTON, "index": i}, title=m["name"])
        for i, m in enumerate(result["matches"][:20])
    ]  # fmt: skip
    return html.Div(
        [html.Ul(names, className="timeline-search-names"), html.Div(buttons, className="chips")]
    )

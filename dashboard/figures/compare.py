"""A comparison's deltas as diverging bar charts: kernels, and time categories.

Input is the `/compare` JSON. Every bar is a row's `delta` in the comparison's basis: time
per step (drawn in the unit of the largest delta, so an axis reads `-200 ms`, never
`-200k µs`), or percentage points of a share when a trace has no steps. The
headline quotes the same `delta`s, so the page's words and bars agree by construction.
Green bars are better in B, red worse, grey where a share moving says nothing by itself.
Each bar carries its row's key in `customdata`.

Public surface: `kernel_delta_figure`, `category_delta_figure`, `kernel_label`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import MONO, base_layout, empty_figure, escape_lines, plotly_text
from dashboard.format import duration_unit, format_duration_ns, shorten_kernel_name

__all__ = ["category_delta_figure", "kernel_delta_figure", "kernel_label"]

BETTER, WORSE, NEUTRAL = "#2b8a3e", "#c92a2a", "#868e96"
TOP_N = 15
JSON = dict[str, Any]


def _axis(rows: Sequence[JSON], basis: str) -> tuple[str, float]:
    """The bars' unit and its size: points of a share, or the largest delta's time unit."""
    if basis == "share":
        return "", 1.0
    unit, scale = duration_unit(max(abs(r["delta"]) for r in rows))
    return f" {unit}", scale


def kernel_label(row: JSON) -> str:
    """A kernel row's short label; a row matched by launching op is named by the op."""
    if row.get("match") == "op":
        return f"{row['name']} (launching op)"
    return shorten_kernel_name(row["name"])


def _axis_title(basis: str, share_of: str) -> str:
    if basis == "share":
        return f"B minus A, share of {share_of} (points)"
    return "B minus A, time per step"


def _value(v: float | None, basis: str) -> str:
    if v is None:
        return "—"
    return f"{v:.2f}%" if basis == "share" else format_duration_ns(v)


def _bars(
    rows: Sequence[JSON], labels: list[str], colors: list[str], basis: str, title: str
) -> go.Figure:
    hover = [
        f"<b>{escape_lines(r.get('name') or r.get('label') or '')}</b><br>"
        f"A: {_value(r['a'], basis)}<br>B: {_value(r['b'], basis)}<br>"
        f"Δ {_value(r['delta'], basis)}"
        + ("" if r.get("delta_pct") is None else f" ({r['delta_pct']:+.1f}%)")
        for r in rows
    ]
    suffix, scale = _axis(rows, basis)
    fig = go.Figure(
        go.Bar(
            x=[r["delta"] / scale for r in rows],
            y=list(range(len(rows))),
            orientation="h",
            marker={"color": colors},
            customdata=[r.get("key") or r.get("category") for r in rows],
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    base_layout(fig, 90 + 30 * len(rows), top=20)
    fig.update_yaxes(
        tickvals=list(range(len(rows))),
        ticktext=[plotly_text(t) for t in labels],
        tickfont={"family": MONO, "size": 12},
        autorange="reversed",
        automargin=True,
    )
    fig.update_xaxes(title_text=title, ticksuffix=suffix, zeroline=True)
    return fig


def _color(better: bool | None) -> str:
    return NEUTRAL if better is None else BETTER if better else WORSE


def kernel_delta_figure(deltas: Sequence[JSON], basis: str, top_n: int = TOP_N) -> go.Figure:
    """The `top_n` kernel rows (matched, new and gone) with the largest |delta|."""
    rows = sorted((d for d in deltas if d["delta"]), key=lambda d: -abs(d["delta"]))[:top_n]
    if not rows:
        return empty_figure("No kernel changed")
    colors = [_color(d["better"]) for d in rows]
    labels = [kernel_label(d) for d in rows]
    return _bars(rows, labels, colors, basis, _axis_title(basis, "kernel time"))


def category_delta_figure(categories: Sequence[JSON], basis: str) -> go.Figure:
    """Every time category and overlap both traces recorded."""
    rows = [c for c in categories if c.get("delta") is not None]
    if not rows:
        return empty_figure("Neither trace recorded a GPU time split")
    colors = [_color(c["better"]) for c in rows]
    labels = [c["label"] for c in rows]
    return _bars(rows, labels, colors, basis, _axis_title(basis, "the GPU span"))

"""The bisect chart: each measured commit's median along the commit chain, good and bad
coloured, the first bad commit marked.

Pure: a bisect from the API in, `go.Figure` out. Public surface: `bisect_figure`,
`add_bisect_marker`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import base_layout, empty_figure, plotly_text

GOOD, BAD, PENDING = "#2f9e44", "#c92a2a", "#adb5bd"


def bisect_figure(bisect: dict[str, Any]) -> go.Figure:
    """Median of the metric per measured commit, x = position in good..bad."""
    steps = [s for s in bisect["steps"] if s["median"] is not None]
    if not steps:
        return empty_figure("No commit measured yet.")
    colours = [GOOD if s["verdict"] == "good" else BAD if s["verdict"] == "bad" else PENDING
               for s in steps]  # fmt: skip
    fig = go.Figure(
        go.Scatter(
            x=[s["position"] for s in steps],
            y=[s["median"] for s in steps],
            mode="markers+text",
            marker={"color": colours, "size": 12},
            text=[plotly_text(s["ref"][:7]) for s in steps],
            textposition="top center",
            hovertemplate="%{text} · position %{x}<br>median %{y:.4g}<extra></extra>",
        )
    )
    first_bad = str(bisect.get("first_bad") or "")
    at = next((s["position"] for s in steps if s["ref"] == first_bad), None)
    if bisect["status"] == "found" and at is not None:
        fig.add_vline(x=at - 0.5, line_dash="dash", line_color=BAD)
        fig.add_annotation(x=at - 0.5, y=0.04, yref="paper", showarrow=False, xanchor="right",
                           text=plotly_text(f"bisected to {first_bad[:10]} "))  # fmt: skip
    base_layout(fig, height=260)
    last = max(len(bisect["commits"]) - 1, 1)
    top = max(s["median"] for s in steps)
    fig.update_xaxes(title_text="commit (0 = good)", range=[-0.5, last + 0.5], dtick=1)
    # From zero, so a 2x step looks like one; headroom for the commit labels.
    fig.update_yaxes(title_text=plotly_text(f"median {bisect['metric']}"),
                     range=[0, top * 1.3] if top > 0 else None)  # fmt: skip
    return fig


def add_bisect_marker(fig: go.Figure, series: dict[str, Any], bisect: dict[str, Any]) -> None:
    """Mark a found bisect on a series chart (x = push index): just before the first bad
    commit when it was pushed, else just before the bad end of the bisected range."""
    commits = [p["commit"] for p in series["points"]]
    first_bad = str(bisect.get("first_bad") or "")
    anchor = next((c for c in (first_bad, bisect["bad"]) if c in commits), None)
    if bisect["status"] != "found" or anchor is None:
        return
    x = commits.index(anchor) - 0.5
    fig.add_vline(x=x, line_dash="dot", line_color=BAD)
    fig.add_annotation(x=x, y=1, yref="paper", showarrow=False, xanchor="right",
                       text=plotly_text(f"bisected to {first_bad[:10]}"))  # fmt: skip

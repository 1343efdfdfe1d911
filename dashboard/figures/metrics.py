"""The series chart: p50 over runs with a p05-p95 band, the noise band learned from A/A
runs (±MDC around the baseline median), thresholds, change points (a change for the worse
is labelled as the first bad commit) and accepted baselines. Runs flagged throttled or
contended are drawn hollow and grey, with the flags in their hover.

Public surface: `series_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure, escape_lines, plotly_text

BAND = "rgba(59, 91, 219, 0.15)"
THRESHOLD = "#e03131"
CHANGE = "#f08c00"
WORSE = "#c92a2a"
ACCEPTED = "#2b8a3e"
NOISE = "rgba(134, 142, 150, 0.22)"
SUSPECT = "#868e96"


def _flags_text(p: dict[str, Any]) -> str:
    """The run's flags, one line each, for the hover."""
    lines = []
    for f in p.get("flags") or []:
        where = f" GPU {f['gpu']}" if f.get("gpu") is not None else ""
        why = f" ({f['reason']})" if f.get("reason") else ""
        detail = f": {f['detail']}" if f.get("detail") else ""
        lines.append(escape_lines(f"{f.get('flag')}{where}{why}{detail}"))
    if p.get("suspect"):
        lines.append("suspect: left out of require_stable SLAs")
    return "<br>" + "<br>".join(lines) if lines else ""


def _hover(p: dict[str, Any]) -> str:
    trace = f"<br>trace {p['trace_id']} (click to open)" if p.get("trace_id") else ""
    where = escape_lines(f"commit {p['commit']} on {p['branch']}")
    return f"{where}<br>{p['timestamp']}{trace}{_flags_text(p)}"


def _noise_band(fig: go.Figure, noise: dict[str, Any] | None, n: int) -> None:
    """The band ±MDC around the baseline median, and a warning when the A/A runs look
    bimodal (two clusters: the spread then describes neither)."""
    if not noise or noise.get("low") is None or noise.get("high") is None:
        return
    xs = [-0.5, n - 0.5]
    label = f"noise band ±{noise['mdc_pct']:.2g}% (MDC)"
    hover = plotly_text(
        f"run-to-run spread {noise['spread_pct']:.2g}% over {noise['commits']} commits, "
        f"{noise['runs']} runs; MDC {noise['mdc_pct']:.2g}% for {noise['n_judged']} vs "
        f"{noise['n_baseline']} runs (alpha {noise['alpha']:g}, power {noise['power']:g})"
    )
    fig.add_scatter(
        x=xs, y=[noise["high"]] * 2, mode="lines", line_width=0, hoverinfo="skip",
        showlegend=False,
    )  # fmt: skip
    fig.add_scatter(
        x=xs, y=[noise["low"]] * 2, mode="lines", line_width=0, fill="tonexty",
        fillcolor=NOISE, name=label, hovertemplate=hover + "<extra></extra>",
    )  # fmt: skip
    fig.add_hline(y=noise["center"], line={"color": SUSPECT, "dash": "dot", "width": 1})
    if noise.get("bimodal"):
        fig.add_annotation(
            x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="bottom",
            showarrow=False, font={"color": WORSE},
            text=plotly_text(f"⚠ A/A runs look bimodal (BC {noise['bimodality']:.2f} > 0.555)"),
        )  # fmt: skip


def series_figure(series: dict[str, Any]) -> go.Figure:
    """The history of one series; `customdata` carries each point's trace id for clicks."""
    points = series["points"]
    if not points:
        return empty_figure("No points for this series yet")
    x = list(range(len(points)))
    ticks = [p["commit"][:8] for p in points]
    fig = go.Figure()
    if any(p["p95"] is not None and p["p05"] != p["p95"] for p in points):
        fig.add_scatter(
            x=x,
            y=[p["p95"] for p in points],
            mode="lines",
            line_width=0,
            hoverinfo="skip",
            showlegend=False,
        )
        fig.add_scatter(
            x=x,
            y=[p["p05"] for p in points],
            mode="lines",
            line_width=0,
            fill="tonexty",
            fillcolor=BAND,
            name="p05-p95",
            hoverinfo="skip",
        )
    _noise_band(fig, series.get("noise"), len(points))
    suspect = [bool(p.get("suspect")) for p in points]
    fig.add_scatter(
        x=x,
        y=[None if s else p["value"] for p, s in zip(points, suspect, strict=True)],
        mode="lines+markers",
        name="p50",
        line={"color": ACCENT, "width": 2},
        marker={"size": 7},
        connectgaps=True,  # the line joins the stable runs; flagged ones float beside it
        text=[_hover(p) for p in points],
        customdata=[p.get("trace_id") for p in points],
        hovertemplate="%{y:.4g}<br>%{text}<extra></extra>",
    )
    flagged = [i for i, s in enumerate(suspect) if s]
    if flagged:
        fig.add_scatter(
            x=flagged,
            y=[points[i]["value"] for i in flagged],
            mode="markers",
            name="flagged run (throttled/contended)",
            marker={"symbol": "circle-open", "color": SUSPECT, "size": 10, "line": {"width": 2}},
            text=[_hover(points[i]) for i in flagged],
            customdata=[points[i].get("trace_id") for i in flagged],
            hovertemplate="%{y:.4g}<br>%{text}<extra></extra>",
        )
    for threshold in series["thresholds"]:
        fig.add_hline(
            y=threshold,
            line={"color": THRESHOLD, "dash": "dash"},
            annotation_text=f"SLA {threshold:g}",
            annotation_position="top left",
        )
    _change_points(fig, series["change_points"])
    _acceptances(fig, points, series.get("acceptances") or [])
    unit = f" ({series['unit']})" if series["unit"] else ""
    base_layout(fig, 420, top=30)
    fig.update_layout(yaxis_title=series["metric"] + unit, legend={"orientation": "h", "y": -0.3})
    fig.update_xaxes(tickvals=x, ticktext=ticks, tickangle=-45, nticks=20, title="commit")
    return fig


def _change_points(fig: go.Figure, change_points: list[dict[str, Any]]) -> None:
    for cp in change_points:
        color = WORSE if cp.get("worse") else CHANGE
        label = "first bad commit " if cp.get("worse") else ""
        fig.add_vline(x=cp["index"] - 0.5, line={"color": color, "width": 2})
        fig.add_annotation(
            x=cp["index"] - 0.5,
            y=1,
            yref="paper",
            showarrow=False,
            yanchor="bottom",
            text=plotly_text(
                f"{cp['shift_pct']:+.1f}% at {label}{cp['commit'][:8]} (p={cp['p_value']:.3f})"
            ),
            font={"color": color},
        )


def _acceptances(
    fig: go.Figure, points: list[dict[str, Any]], acceptances: list[dict[str, Any]]
) -> None:
    """A dashed line where a baseline was accepted, naming the SLA and who accepted it."""
    index = {p["run"]: i for i, p in enumerate(points)}
    for n, a in enumerate(acceptances):
        i = index.get(a["run_id"])
        if i is None:
            continue
        fig.add_vline(x=i - 0.5, line={"color": ACCEPTED, "width": 2, "dash": "dash"})
        fig.add_annotation(
            x=i - 0.5,
            y=0.02 + 0.08 * n,
            yref="paper",
            xanchor="left",
            showarrow=False,
            text=plotly_text(
                f"baseline of {a['sla_name']} accepted by {a['accepted_by']} "
                f"{str(a['accepted_at'])[:16].replace('T', ' ')}"
            ),
            hovertext=escape_lines(a["reason"]),
            font={"color": ACCEPTED},
        )

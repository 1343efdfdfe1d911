"""The panels of the series page under its chart: the noise band, change points, the SLAs
over the series with the first bad commit each names, accepted baselines, and the form to
accept one.

Public surface: `noise_summary`, `change_list`, `sla_list`, `acceptance_list`,
`accept_form`, and the IDs of the form's fields.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from dash import dcc, html

SERIES_ACCEPT_SLA = "series-accept-sla"
SERIES_ACCEPT_COMMIT = "series-accept-commit"
SERIES_ACCEPT_REASON = "series-accept-reason"
SERIES_ACCEPT_GO = "series-accept-go"
SERIES_ACCEPT_RESULT = "series-accept-result"
BASELINE_RULES = ("relative", "no_increase", "regression")


def _nearest_trace(points: list[dict[str, Any]], indexes: range) -> str | None:
    return next((points[i]["trace_id"] for i in indexes if points[i].get("trace_id")), None)


def change_list(series: dict[str, Any]) -> html.Ul:
    """Each change point, a change for the worse named as a first bad commit, with a link
    to compare the traces on either side when both exist."""
    points, items = series["points"], []
    for cp in series["change_points"]:
        i = cp["index"]
        before = _nearest_trace(points, range(i - 1, -1, -1))
        after = _nearest_trace(points, range(i, len(points)))
        text = (
            f"{cp['shift_pct']:+.1f}% at commit {cp['commit']} "
            f"({cp['before']:.4g} → {cp['after']:.4g}, p = {cp['p_value']:.3f})"
        )
        worse = html.Strong(" first bad commit", className="series-worse") if cp["worse"] else ""
        link = (
            dcc.Link(" compare traces", href=f"/compare?{urlencode({'a': before, 'b': after})}")
            if before and after
            else html.Span(" (no traces to compare)", className="muted")
        )
        items.append(html.Li([text, worse, link]))
    return html.Ul(items or [html.Li("No significant change point.")], className="series-changes")


def sla_list(series: dict[str, Any]) -> html.Ul:
    """The SLAs over the series, their status, and the first bad commit a failing one names."""
    items = []
    for s in series["slas"]:
        status = (s["status"] or "no_data").replace("_", " ")
        bad = f" · first bad commit {s['first_bad_commit']}" if s["first_bad_commit"] else ""
        items.append(html.Li(f"{s['name']} ({s['rule']}): {status}{bad}"))
    return html.Ul(items or [html.Li("No SLA covers this series.")], className="series-slas")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def noise_summary(series: dict[str, Any]) -> html.Div:
    """The series' noise band in words: spread, MDC, how many A/A runs it comes from, a
    bimodality warning, and the flagged runs of the series."""
    noise = series.get("noise") or {}
    flagged = sum(1 for p in series["points"] if p.get("suspect"))
    lines: list[Any] = []
    if noise.get("spread_pct") is None:
        lines.append(html.P(noise.get("reason") or "No noise band.", className="muted"))
    else:
        lines.append(
            html.P(
                f"Run-to-run spread {noise['spread_pct']:.3g} % ({noise['estimator']}; "
                f"{_count(noise['commits'], 'commit')}, {_count(noise['runs'], 'run')}). "
                "Minimum detectable change "
                f"{noise['mdc_pct']:.3g} % for {noise['n_judged']} run(s) against "
                f"{noise['n_baseline']} (alpha {noise['alpha']:g}, power {noise['power']:g}).",
                className="series-noise",
            )
        )
    if noise.get("bimodal"):
        lines.append(
            html.P(
                f"⚠ The A/A runs look bimodal (Sarle's coefficient {noise['bimodality']:.2f} > "
                "0.555): the runs fall in two clusters, so one spread describes neither. "
                "Look for two clock or placement states.",
                className="series-bimodal",
            )
        )
    if flagged:
        lines.append(
            html.P(
                f"{flagged} run(s) flagged throttled or contended (hollow grey points): "
                "left out of the band and of require_stable SLAs.",
                className="muted",
            )
        )
    return html.Div(lines, className="series-noise-panel")


def acceptance_list(series: dict[str, Any]) -> html.Ul:
    """Every accepted baseline: which SLA, from which commit, who, when and why."""
    items = [
        html.Li(
            [
                f"{a['sla_name']}: commit {a['commit']} accepted as the baseline by "
                f"{a['accepted_by']} at {str(a['accepted_at'])[:19].replace('T', ' ')} UTC — ",
                html.Q(a["reason"]),
            ]
        )
        for a in series["acceptances"]
    ]
    return html.Ul(
        items or [html.Li("No baseline has been accepted.")], className="series-acceptances"
    )


def accept_form(series: dict[str, Any]) -> html.Div:
    """Pick an SLA with a baseline, optionally a commit, say why, and accept. Without such
    an SLA the form is only hidden, so its callback still finds every field."""
    options = [
        {"label": s["name"], "value": s["id"]}
        for s in series["slas"]
        if s["rule"] in BASELINE_RULES
    ]
    form = html.Div(
        [
            html.Label(
                [
                    "SLA",
                    dcc.Dropdown(
                        id=SERIES_ACCEPT_SLA,
                        options=options,
                        value=options[0]["value"] if options else None,
                        clearable=False,
                    ),
                ]
            ),
            html.Label(
                [
                    "Commit",
                    dcc.Input(
                        id=SERIES_ACCEPT_COMMIT,
                        type="text",
                        placeholder="where the open regression began",
                    ),
                ]
            ),
            html.Label(
                [
                    "Why",
                    dcc.Textarea(
                        id=SERIES_ACCEPT_REASON, placeholder="why this level is the new normal"
                    ),
                ]
            ),
            html.Button("Accept as new baseline", id=SERIES_ACCEPT_GO, className="button"),
            html.Div(id=SERIES_ACCEPT_RESULT),
        ],
        className="series-accept",
        hidden=not options,
    )
    note = html.P(
        "No relative, no_increase or regression SLA covers this series.", className="muted"
    )
    return html.Div([form] if options else [note, form])

"""The GPU guard on the benchmark run page: flag badges, per-GPU state, settle report.

Pure builders: a run's `flags` and `environment` (`gpu_state`, `settle`) in, Dash
components out. See docs/BENCHMARKS.md, "GPU state and flags (issue #22)".
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html
from dash.development.base_component import Component

from dashboard.components.benchmark_tables import data_attr, kv_table
from dashboard.figures.gpu_state import gpu_state_figure

FIELDS = (
    ("sm_mhz", "SM clock", "MHz"),
    ("mem_mhz", "Memory clock", "MHz"),
    ("power_w", "Power", "W"),
    ("power_limit_w", "Power limit", "W"),
    ("temp_c", "Temperature", "°C"),
    ("util_pct", "Utilisation", "%"),
)


def flag_badge(flag: dict[str, Any]) -> html.Span:
    """`throttled · sw_power_cap` (GPU n), coloured by flag, the detail as its tooltip."""
    return html.Span(
        f"{flag.get('flag')} · {flag.get('reason')} · gpu{flag.get('gpu')}",
        className=f"badge flag-badge flag-{flag.get('flag')}",
        title=str(flag.get("detail", "")),
        **data_attr("flag", f"{flag.get('flag')}/{flag.get('reason')}"),
    )


def flag_badges(flags: list[dict[str, Any]]) -> html.Div | None:
    """A row of badges for the page header; None when the run has no flags."""
    if not flags:
        return None
    return html.Div([flag_badge(f) for f in flags], className="flag-row", id="bench-run-flags")


def _num(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _summary_table(gpu: dict[str, Any]) -> html.Table:
    head = html.Thead(html.Tr([html.Th(h) for h in ("", "min", "median", "max")]))
    rows = []
    for key, label, unit in FIELDS:
        s = (gpu.get("summary") or {}).get(key)
        cells = [_num(s.get(k)) if s else "—" for k in ("min", "median", "max")]
        rows.append(html.Tr([html.Td(f"{label} ({unit})")]
                            + [html.Td(c, className="num") for c in cells]))  # fmt: skip
    return html.Table([head, html.Tbody(rows)], className="data-table gpu-summary")


def _gpu(gpu: dict[str, Any], state: dict[str, Any]) -> Component:
    shares = gpu.get("reasons") or {}
    reasons = ", ".join(f"{k} {v:.1%}" for k, v in shares.items()) or "none"
    pairs = [
        ("Samples", f"{gpu.get('samples')} every {state.get('period_ms')} ms"),
        ("Clocks-event reasons", reasons),
        ("Max SM / memory clock", f"{gpu.get('sm_max_mhz')} / {gpu.get('mem_max_mhz')} MHz"),
        ("Application clock (default)",
         f"{gpu.get('app_clock_mhz')} ({gpu.get('default_app_clock_mhz')}) MHz"),
        ("P0 SM clock range", "-".join(map(str, gpu.get("pstate0_sm_mhz") or [])) or "—"),
        ("Other processes", ", ".join(map(str, gpu.get("foreign_pids") or [])) or "none"),
    ]  # fmt: skip
    if not gpu.get("evaluated", True):
        pairs.append(("Flags", "not judged: the command left this GPU idle"))
    figure = gpu_state_figure(gpu, int(state.get("slowdown_mask") or 0))
    return html.Div(
        [
            html.H3(f"GPU {gpu.get('index')} · {gpu.get('name') or 'unknown'}",
                    className="point-title"),
            html.Div([html.Div([kv_table(pairs), _summary_table(gpu)]),
                      dcc.Graph(figure=figure, config={"displaylogo": False, "responsive": True},
                                className="gpu-state-chart")],
                     className="bench-grid"),
        ],
        **data_attr("gpu", str(gpu.get("index"))),
    )  # fmt: skip


def _settle(report: dict[str, Any]) -> Component:
    idle, steady = report.get("idle") or {}, report.get("steady") or {}
    pairs: list[tuple[str, Any]] = [("Converged", "yes" if report.get("converged") else "no")]
    if report.get("why"):
        pairs.append(("Why", report["why"]))
    if idle:
        state = "idle" if idle.get("converged") else f"gave up: {idle.get('why')}"
        pairs.append(("Idle wait", f"{idle.get('waited_s')} s ({state})"))
    if steady.get("skipped"):
        pairs.append(("Steady warm-up", f"skipped: {steady['skipped']}"))
    elif steady:
        state = "steady" if steady.get("converged") else "not steady at the timeout"
        pairs.append(("Steady warm-up", f"{steady.get('took_s')} s, {steady.get('chunks')} "
                                        f"chunks ({state})"))  # fmt: skip
        last = (steady.get("readings") or [{}])[0]
        pairs.append(("At the end", f"{last.get('sm_mhz')} MHz, {last.get('power_w')} W, "
                                    f"{last.get('temp_c')} °C"))  # fmt: skip
    return html.Div([html.H3("Settle", className="point-title"), kv_table(pairs)],
                    id="bench-run-settle")  # fmt: skip


def gpu_state_section(run_flags: list[dict[str, Any]], env: dict[str, Any]) -> html.Section:
    """The card: every flag with its detail, settle, then each GPU's table and chart."""
    state = env.get("gpu_state") or {}
    body: list[Component] = [html.H2("GPU state through the timed loops")]
    if run_flags:
        body.append(html.Ul([html.Li([flag_badge(f), " ", html.Span(f.get("detail", ""))])
                             for f in run_flags], className="flag-list"))  # fmt: skip
    if env.get("settle"):
        body.append(_settle(env["settle"]))
    gpus = state.get("gpus") or []
    if not gpus:
        body.append(html.Div("Not sampled: a CPU run, or NVML (nvidia-ml-py) is not installed "
                             "on the runner.", className="muted small"))  # fmt: skip
    body += [_gpu(g, state) for g in gpus]
    return html.Section(body, className="card", id="bench-run-gpu-state")

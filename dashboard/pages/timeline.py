"""`/traces/<trace_id>/timeline`: the zoomable timeline of one trace.

The timeline itself is drawn in the browser on a canvas by `assets/timeline/main.js`,
mounted into `#perfdash-timeline`, which fetches windows of the trace from the API
(`GET .../timeline/columns`) as the view moves: no Dash round trip per zoom. This page
adds what lives around it: jump to step, the step marker, the GPU idle gaps and the
downloads. A step or gap moves the canvas through `window.perfdashTimeline.setRange`,
and the canvas keeps the view in the URL (`?start_ns=&end_ns=`).
"""

from __future__ import annotations

import json
from typing import Any

import dash
from dash import ALL, Input, Output, State, callback, clientside_callback, dcc, html
from dash.development.base_component import Component

from dashboard.api import timeline as api
from dashboard.api.client import ApiError, current_client
from dashboard.components import notice
from dashboard.components.step_marker import AUTOMATIC, marker_note, marker_options
from dashboard.components.timeline_panels import (
    GAP_BUTTON,
    category_legend,
    gaps_panel,
    step_options,
)
from dashboard.figures.theme import CATEGORY_COLORS

dash.register_page(  # type: ignore[no-untyped-call]
    __name__,
    path_template="/traces/<trace_id>/timeline",
    title="Timeline · perfdash",
    name="Timeline",
)

CANVAS = "perfdash-timeline"  # the element main.js mounts into
TIMELINE_ID = "timeline-trace-id"
TIMELINE_STEPS = "timeline-steps"
TIMELINE_GAP_DATA = "timeline-gap-data"
TIMELINE_STEP = "timeline-step"
TIMELINE_MARKER = "timeline-marker"
TIMELINE_MARKER_NOTE = "timeline-marker-note"
TIMELINE_MOVED = "timeline-moved"
TIMELINE_PERFETTO = "timeline-perfetto"
TIMELINE_LEGEND = "timeline-legend"
PERFETTO_UI = "https://ui.perfetto.dev"


def _int_text(value: str | None) -> str:
    """The URL's ns value if it is an integer (passed to the canvas as text: ns since the
    epoch exceed what a JavaScript number holds exactly)."""
    text = (value or "").strip()
    return text if text.lstrip("-").isdigit() else ""


def _step_picker(steps: api.Steps) -> list[Component]:
    """Jump to step, and the step marker: which one is used (or that none was found)."""
    note = marker_note(steps["marker"], steps["marker_source"], len(steps["items"]))
    return [
        dcc.Dropdown(id=TIMELINE_STEP, options=step_options(steps["items"]),
                     placeholder="Jump to step…" if steps["items"] else "No steps to jump to",
                     clearable=True, className="timeline-step"),
        html.Label("Step marker", htmlFor=TIMELINE_MARKER, className="muted small"),
        dcc.Dropdown(id=TIMELINE_MARKER, options=marker_options(steps["options"]),
                     value=steps["chosen"] or AUTOMATIC, clearable=False,
                     className="timeline-marker", placeholder="Step marker…"),
        html.Div(note, id=TIMELINE_MARKER_NOTE, className="muted small timeline-marker-note"),
    ]  # fmt: skip


def _perfetto_help() -> html.Details:
    """How to open the download in Perfetto. Instructions rather than a `?url=` link: that
    link only opens traces on public HTTPS servers that send CORS headers to Perfetto."""
    return html.Details(
        [
            html.Summary("Open in Perfetto"),
            html.Div([html.Ol([
                html.Li(["Click ", html.B("Download Chrome trace JSON"), "."]),
                html.Li(["Go to ", html.A("ui.perfetto.dev", href=PERFETTO_UI, target="_blank",
                                          rel="noopener noreferrer"),
                         " and choose ", html.B("Open trace file"),
                         " in the sidebar (or drop the file on the page)."]),
                html.Li("Click a kernel and follow its flow arrow to the CUDA launch "
                        "that queued it (ac2g flows)."),
            ]),
            html.P("Perfetto reads the file inside your browser: it is not uploaded "
                   "anywhere. A ui.perfetto.dev/#!/?url= link would only work if this "
                   "server were public, on HTTPS, with CORS headers for Perfetto.",
                   className="muted small"),
            ], className="perfetto-help-body"),
        ],
        id=TIMELINE_PERFETTO,
        className="perfetto-help",
    )  # fmt: skip


def _controls(trace_id: str, steps: api.Steps) -> html.Div:
    return html.Div(
        [
            *_step_picker(steps),
            html.A("Download Chrome trace JSON", href=api.export_path(trace_id),
                   download=f"{trace_id}.trace.json", className="button button-secondary",
                   title="Opens in Perfetto UI, with CPU launch → kernel flows"),
            _perfetto_help(),
            html.A("Download events (Parquet)", href=api.events_parquet_path(trace_id),
                   download=f"{trace_id}.events.parquet", className="button button-secondary",
                   title="The stored events, for pandas, polars or DuckDB"),
        ],
        className="timeline-controls",
    )  # fmt: skip


def _components(
    trace_id: str, steps: api.Steps, gaps: api.Gaps, start: str, end: str
) -> list[Component]:
    data: dict[str, Any] = {"data-trace": trace_id, "data-start": start, "data-end": end,
                            "data-palette": json.dumps(CATEGORY_COLORS)}  # fmt: skip
    canvas = html.Div(
        html.P("Loading the timeline…", className="muted"), id=CANVAS, className="pdt-root", **data
    )
    return [
        dcc.Store(id=TIMELINE_STEPS, data=steps["items"]),
        dcc.Store(id=TIMELINE_GAP_DATA, data=gaps["items"]),
        html.Div(id=TIMELINE_MOVED, hidden=True),
        _controls(trace_id, steps),
        category_legend(TIMELINE_LEGEND),
        canvas,
        html.Section([html.H2("GPU idle gaps"), gaps_panel(gaps)], className="card timeline-gaps"),
    ]


def _empty_steps() -> api.Steps:
    return {"trace_id": "", "items": [], "marker": None, "marker_source": None,
            "chosen": None, "options": []}  # fmt: skip


def layout(
    trace_id: str | None = None, start_ns: str | None = None, end_ns: str | None = None, **_q: str
) -> html.Div:
    """Fresh on every visit; the URL's window (if any) is the first one shown."""
    if not trace_id:  # Dash's validation call: every component ID, no data
        gaps: api.Gaps = {"min_ns": 0, "count": 0, "rule": "", "items": []}
        return html.Div([dcc.Store(id=TIMELINE_ID), *_components("", _empty_steps(), gaps, "", "")])
    head = [
        dcc.Link("← Trace", href=f"/traces/{trace_id}", className="back-link"),
        html.H1("Timeline", className="page-title"),
        dcc.Store(id=TIMELINE_ID, data=trace_id),
    ]
    try:
        client = current_client()
        steps, gaps = api.get_steps(client, trace_id), api.get_gaps(client, trace_id)
        body = _components(trace_id, steps, gaps, _int_text(start_ns), _int_text(end_ns))
    except ApiError as e:
        body = [notice(f"Cannot show this trace's timeline: {e.detail}", "error")]
    return html.Div([*head, *body], className="timeline-page")


@callback(
    Output(TIMELINE_STEPS, "data"),
    Output(TIMELINE_STEP, "options"),
    Output(TIMELINE_STEP, "value"),
    Output(TIMELINE_MARKER_NOTE, "children"),
    Input(TIMELINE_MARKER, "value"),
    State(TIMELINE_ID, "data"),
    prevent_initial_call=True,
)
def choose_marker(marker: str | None, trace_id: str) -> tuple[Any, ...]:
    """A step marker picked for this trace is kept (the API re-derives its step times)."""
    try:
        steps = api.set_step_marker(current_client(), trace_id, marker or None)
    except ApiError as e:
        return dash.no_update, dash.no_update, None, notice(f"Not kept: {e.detail}", "error")
    note = marker_note(steps["marker"], steps["marker_source"], len(steps["items"]))
    return steps["items"], step_options(steps["items"]), None, note


# A step or a gap moves the canvas; steps and gaps carry absolute ns, which JSON numbers
# round to ~256 ns on Kineto's clock: nothing a user jumping to a step can see.
clientside_callback(
    """function(step, gapClicks, steps, gaps) {
        const t = window.perfdashTimeline;
        const trig = (window.dash_clientside.callback_context.triggered || [])[0];
        if (!t || !trig || trig.value === null || trig.value === undefined) {
            return window.dash_clientside.no_update;
        }
        if (trig.prop_id.startsWith("timeline-step.")) {
            const s = (steps || []).find(x => x.step === step);
            if (s) { t.setRange(s.start_ns, s.end_ns); }
        } else if (trig.value) {
            const id = JSON.parse(trig.prop_id.split(".")[0]);
            const g = (gaps || [])[id.index];
            if (g) {
                const pad = Math.max(g.end_ns - g.start_ns, 2000);
                t.setRange(g.start_ns - pad, g.end_ns + pad);
            }
        }
        return "";
    }""",
    Output(TIMELINE_MOVED, "children"),
    Input(TIMELINE_STEP, "value"),
    Input({"type": GAP_BUTTON, "index": ALL}, "n_clicks"),
    State(TIMELINE_STEPS, "data"),
    State(TIMELINE_GAP_DATA, "data"),
    prevent_initial_call=True,
)

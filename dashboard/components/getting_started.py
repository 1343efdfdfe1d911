"""What an empty SLA board or Benchmarks page says: what to do from a terminal, what to do
from the browser (the API's own try-it page, which this server serves), an example to
copy, and where the full reference is.

Public surface: `getting_started`, `SLA_START`, `BENCHMARK_START`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dash import html

from dashboard.api.benchmarks import UPSERT_SPEC_ROUTE
from dashboard.api.metrics import APPLY_SLAS_ROUTE

__all__ = ["BENCHMARK_START", "SLA_START", "getting_started"]

API_DOCS = "/docs"  # FastAPI's Swagger UI, served by `perfdash serve`


@dataclass(frozen=True, slots=True)
class Start:
    """One empty page's guide: the CLI line, the API route and its tag, an example, the doc."""

    lead: str
    command: str
    route: str
    tag: str
    scope: str
    body: str
    example: str
    doc: str
    section: str


SLA_START = Start(
    lead="No SLAs yet. An SLA judges every run pushed for a benchmark's metric "
    "(a threshold, no worse than a baseline, or no regression) and gets a tile here.",
    command="perfdash sla apply slas.yaml --url http://127.0.0.1:8000",
    route=APPLY_SLAS_ROUTE,
    tag="slas",
    scope="slas:write",
    body="the example's SLAs as a JSON array",
    example="""slas:
  - name: train-step-p95
    project: llm-train
    benchmark: gpt-small
    metric: step_time_ms
    statistic: p95
    rule: absolute
    op: "<="
    threshold: 12
    severity: critical
  - name: step-time-regression
    project: llm-train
    benchmark: gpt-small
    metric: step_time_ms
    rule: regression          # first bad commit, with a baseline from main
    severity: warning
""",
    doc="docs/CI.md",
    section="SLAs as YAML in your repository",
)

BENCHMARK_START = Start(
    lead="No benchmark specs yet. A spec is a workload a GPU runner re-runs on demand or "
    "on a schedule; its runs' metrics feed the series and SLAs.",
    command="perfdash bench apply benchmarks.yaml --url http://127.0.0.1:8000",
    route=UPSERT_SPEC_ROUTE,
    tag="benchmarks",
    scope="benchmarks:write",
    body="one spec of the example as a JSON object",
    example="""benchmarks:
  - name: gemm-bf16
    project: llm
    workload: gemm
    params: {n: 8192, k: 8192, dtype: bf16}
    sweep: {m: [2048, 4096, 8192]}
    warmup: 100
    iters: 200
""",
    doc="docs/BENCHMARKS.md",
    section="Specs",
)


def getting_started(start: Start, id_: str) -> html.Div:
    """The empty page's guide, as components (code as code, no literal backticks)."""
    return html.Div(
        [
            html.P(start.lead, className="getting-started-lead"),
            html.Ul(
                [
                    html.Li(["From a terminal: ", html.Code(start.command),
                             " (a token with ", html.Code(start.scope),
                             " in PERFDASH_TOKEN when the server asks for one)."]),
                    html.Li(["From the browser: open the ",
                             html.A("API docs", href=f"{API_DOCS}#/{start.tag}",
                                    target="_blank", className="getting-started-api"),
                             ", find ", html.Code(start.route),
                             ", choose “Try it out” and send ", start.body, "."]),
                    html.Li(["Every field and rule: ", html.Code(start.doc), ", section “",
                             start.section, "”, in the perfdash repository."]),
                ]
            ),
            html.Details(
                [html.Summary("An example to start from"),
                 html.Pre(start.example, className="getting-started-example")],
                open=True,
            ),
        ],
        id=id_,
        className="empty-state getting-started",
    )  # fmt: skip

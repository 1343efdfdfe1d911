"""What "Run now" answers on the Benchmarks list and a spec's page: the run queued, with a
link to follow it, then each of the API's warnings (no runner serves the queue, ...), the
same lines `perfdash bench run` prints.

Public surface: `run_queued`.
"""

from __future__ import annotations

from dash import dcc
from dash.development.base_component import Component

from dashboard.api.benchmarks import BenchRun
from dashboard.components import notice

__all__ = ["run_queued"]


def run_queued(name: str, run: BenchRun) -> list[Component]:
    """A success notice for the queued run, and one warning notice per API warning."""
    link = dcc.Link("follow it", href=f"/benchmark-runs/{run['id']}")
    done = notice([f"Queued a run of {name} ({run['id'][:8]}); ", link, "."], "success")
    return [done, *(notice(w, "warning") for w in run["warnings"])]

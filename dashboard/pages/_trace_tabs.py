"""Fetch and compose one tab of the trace page from its URL query (private to the page).

Each `_tab` function reads the query, calls the API through `dashboard.api.views`,
and hands the JSON to a pure panel builder; an API error becomes a notice in the tab,
never a broken page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import html
from dash.development.base_component import Component

from dashboard.api import compile_view, views
from dashboard.api import memory_ops as memory_ops_api
from dashboard.api import memory_snapshot as memsnap_api
from dashboard.api import ncu as ncu_api
from dashboard.api import operators as operators_api
from dashboard.api import query as query_api
from dashboard.api import ranges as ranges_api
from dashboard.api import ranks as ranks_api
from dashboard.api.client import ApiClient, ApiError
from dashboard.api.traces import KernelStats, Trace, get_kernels, list_traces
from dashboard.api.views import SORT_KEYS, KernelQuery
from dashboard.components import notice
from dashboard.components.analysis_panels import memory_panel, roofline_panel
from dashboard.components.compile_panel import compile_panel
from dashboard.components.kernels_panel import GROUPS, kernels_panel
from dashboard.components.memory_ops_panel import memory_ops_panel, memory_ops_query
from dashboard.components.memory_snapshot_panel import memory_snapshot_panel
from dashboard.components.ncu_panel import ncu_panel
from dashboard.components.operators_panel import operators_panel
from dashboard.components.overview_panel import overview_panel
from dashboard.components.query_panel import query_panel
from dashboard.components.ranges_panel import default_range, ranges_panel
from dashboard.components.ranks_panel import ranks_panel, steps_panel
from dashboard.components.trace_views import has_memory_snapshot

JSON = dict[str, Any]
TOP_N = 10
TORCH_FORMAT = "torch_profiler"
QUERY_LIMIT = 1000


def _try(fetch: Callable[[], Any]) -> Any:
    """The fetched value, or None when the API said no or sent something that is not JSON
    (an endpoint missing from this server); the panel then shows its own state."""
    try:
        return fetch()
    except (ApiError, ValueError):
        return None


def _int(value: str | None, default: int) -> int:
    try:
        return max(0, int(value or default))
    except ValueError:
        return default


def kernel_query(query: dict[str, str]) -> KernelQuery:
    """The table's state from the URL, with anything unknown replaced by the default."""
    sort = query.get("sort") or "total_ns"
    group = query.get("group") or "name"
    return KernelQuery(
        group=group if group in dict(GROUPS) else "name",
        sort=sort if sort in SORT_KEYS else "total_ns",
        q=(query.get("q") or "").strip(),
        page=_int(query.get("page"), 0),
    )


def kernel_url_query(
    query: dict[str, str],
    page: int | None,
    sort: str | None,
    group: str | None,
    q: str | None,
) -> dict[str, str]:
    """The URL query after a table interaction; a new grouping or search starts at page 0.

    The API sorts one way per column (numbers largest first, names A to Z), so `sort` is
    the column sorted by (None: unchanged) and the direction the table shows is the API's.
    """
    old = kernel_query(query)
    sort = sort or old.sort
    changed_filter = (group or "name") != old.group or (q or "").strip() != old.q
    new = {
        "tab": "kernels",
        "group": "" if (group or "name") == "name" else str(group),
        "sort": "" if sort == "total_ns" else sort,
        "q": (q or "").strip(),
        "page": "" if changed_filter or not page else str(page),
    }
    return {k: v for k, v in new.items() if v}


def _overview(client: ApiClient, trace: Trace, _q: dict[str, str]) -> Component:
    tid = trace["id"]
    kernels: KernelStats | None = _try(lambda: get_kernels(client, tid, limit=TOP_N))
    return overview_panel(
        trace,
        _try(lambda: views.get_summary(client, tid)),
        _try(lambda: views.get_device_peaks(client, tid)) or [],
        _try(lambda: views.get_findings(client, tid)),
        kernels,
        "trace-detail",
    )


def _kernels(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    tid, query = trace["id"], kernel_query(q)
    page = _try(lambda: views.get_kernel_page(client, tid, query))
    top: KernelStats | None = _try(lambda: get_kernels(client, tid, limit=TOP_N))
    items: list[Any] = list(top["items"]) if top else []
    return kernels_panel(page, items, query, "trace-kernels")


def _roofline(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    tid, vs = trace["id"], q.get("vs") or None
    roofline = _try(lambda: views.get_roofline(client, tid))
    if roofline is None:
        return notice("Could not compute the roofline of this trace.", "error")
    overlay = _try(lambda: views.get_roofline(client, vs)) if vs and vs != tid else None
    listed = _try(lambda: list_traces(client, limit=200)) or {"items": []}
    others = [t for t in listed["items"] if t["id"] != tid and t["status"] == "ready"]
    color = "bound" if q.get("color") == "bound" else "precision"
    panel = roofline_panel(roofline, overlay, color, vs, others, "trace-roofline")
    if trace.get("format") != "ncu_csv":
        return panel
    sections = _try(lambda: ncu_api.get_ncu_sections(client, tid))
    card = ncu_panel(sections, roofline.get("points") or [], tid, q, "trace-ncu")
    return html.Div([panel, card])


def _memory(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    tid, mq = trace["id"], memory_ops_query(q)
    memory = _try(lambda: views.get_memory(client, tid))
    if memory is None:
        return notice("Could not load the memory series of this trace.", "error")
    if not memory.get("devices"):
        return memory_panel(memory, "trace-memory")
    ops = _try(lambda: memory_ops_api.get_memory_ops(client, tid, mq.device, mq.group, mq.sort))
    peak = _try(lambda: memory_ops_api.get_memory_peak(client, tid, mq.device, mq.group))
    by_op = memory_ops_panel(
        tid, ops, peak, mq, memory.get("start_ns"), trace.get("duration_ns"), "trace-memory-ops"
    )
    return html.Div([memory_panel(memory, "trace-memory"), by_op])


def _steps(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    window = "gpu" if q.get("window") == "gpu" else "cpu"
    breakdown = _try(lambda: ranks_api.get_step_breakdown(client, trace["id"], window))
    if breakdown is None:
        return notice("Could not compute the steps of this trace.", "error")
    return steps_panel(breakdown, trace["id"], "trace-steps")


def _ranks(client: ApiClient, trace: Trace, _q: dict[str, str]) -> Component:
    tid = trace["id"]
    ranks = _try(lambda: ranks_api.get_ranks(client, tid))
    if ranks is None:
        return notice("Could not compute the ranks of this trace.", "error")
    collectives = _try(lambda: ranks_api.get_collectives(client, tid))
    return ranks_panel(ranks, collectives, _try(lambda: views.get_summary(client, tid)),
                       "trace-ranks")  # fmt: skip


def _query(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    """The editor and schema; with `sql` in the URL, its result (or the API's refusal)."""
    tid, sql = trace["id"], (q.get("sql") or "").strip()
    schema = _try(lambda: query_api.get_query_schema(client, tid))
    result, error = None, None
    if sql:
        limit = min(_int(q.get("limit"), QUERY_LIMIT), 100_000) or QUERY_LIMIT
        try:
            result = query_api.run_query(client, tid, sql, limit)
        except ApiError as e:
            error = e.detail
    return query_panel(tid, sql, schema, result, error, "trace-query")


def _ranges(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    """Ranges with the durations of the one in the URL (`range`, `domain`, `side`), or of the
    busiest repeated one; then the CUDA graphs."""
    tid = trace["id"]
    ranges = _try(lambda: ranges_api.get_ranges(client, tid))
    side = "gpu" if q.get("side") == "gpu" else "cpu"
    chosen = (q["range"], q.get("domain") or None, side) if q.get("range") else None
    selected = chosen or (default_range(ranges["items"]) if ranges else None)
    durations = None
    if selected is not None:
        name, domain, on = selected
        durations = _try(lambda: ranges_api.get_range_durations(client, tid, name, domain, on))
    graphs = _try(lambda: ranges_api.get_graphs(client, tid))
    return ranges_panel(ranges, selected, durations, graphs, "trace-ranges")


def operators_url_query(group: str | None, q: str | None) -> dict[str, str]:
    """The Operators tab's URL query: grouping (name is the default) and search."""
    new = {"tab": "operators", "group": "shape" if group == "shape" else "", "q": (q or "").strip()}
    return {k: v for k, v in new.items() if v}


def _operators(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    tid = trace["id"]
    group = "shape" if q.get("group") == "shape" else "name"
    search = (q.get("q") or "").strip()
    ops = _try(lambda: operators_api.get_operators(client, tid, group, search))
    stacks = None
    if ops and (ops["has_stacks"] or ops["has_modules"]):
        stacks = _try(lambda: operators_api.get_operator_stacks(client, tid))
    return operators_panel(ops, stacks, group, search, "trace-operators")


def _memsnap(client: ApiClient, trace: Trace, q: dict[str, str]) -> Component:
    """The memory snapshot's views for one device (`device` in the URL, else the first)."""
    device = _int(q.get("device"), -1)
    at = "dump" if q.get("at") == "dump" else "peak"
    dev = device if device >= 0 else None
    data = _try(lambda: memsnap_api.get_snapshot_views(client, trace["id"], dev, at))
    if data is None:
        return notice("Could not load this trace's memory snapshot.", "error")
    return memory_snapshot_panel(data, trace["id"], "trace-memsnap")


def _compile(client: ApiClient, trace: Trace, _q: dict[str, str]) -> Component:
    return compile_panel(_try(lambda: compile_view.get_compile(client, trace["id"])),
                         "trace-compile")  # fmt: skip


def hidden_tabs(client: ApiClient, trace: Trace) -> frozenset[str]:
    """Tabs with nothing to show: Compile unless a torch profiler trace has compile ranges
    (one cheap call, `top=1`, made for torch traces only); Memory snapshot unless the trace
    is, or came with, one (known from the trace itself)."""
    hidden = set() if has_memory_snapshot(trace) else {"memsnap"}
    if trace.get("format") == TORCH_FORMAT:
        found = _try(lambda: compile_view.get_compile(client, trace["id"], top=1))
        if compile_view.has_compile(found):
            return frozenset(hidden)
    return frozenset(hidden | {"compile"})


RENDERERS: dict[str, Callable[[ApiClient, Trace, dict[str, str]], Component]] = {
    "overview": _overview,
    "kernels": _kernels,
    "operators": _operators,
    "roofline": _roofline,
    "memory": _memory,
    "ranges": _ranges,
    "compile": _compile,
    "steps": _steps,
    "ranks": _ranks,
    "query": _query,
    "memsnap": _memsnap,
}


def render(tab: str, client: ApiClient, trace: Trace, query: dict[str, str]) -> Component:
    """The tab's content, inside a container the tests and styles can find."""
    return html.Div(
        RENDERERS[tab](client, trace, query), id=f"trace-tab-{tab}", className="trace-tab-panel"
    )

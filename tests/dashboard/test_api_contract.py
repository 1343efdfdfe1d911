"""Every response TypedDict in `dashboard/api/` against the API's OpenAPI schema.

A field the API renames, drops, stops always sending or retypes then fails here, not on a
page. The checker itself is in `api_contract.py`; the tests at the bottom show it failing
on such changes, made to a copy of the real schema.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
import typing
from collections.abc import Callable
from types import ModuleType
from typing import Any, NotRequired, TypedDict

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel

import dashboard.api
from backend.main import create_app
from dashboard.api import (
    benchmarks,
    compile_view,
    me,
    memory_ops,
    ncu,
    operators,
    query,
    ranges,
    ranks,
    timeline,
    traces,
)
from tests.dashboard.api_contract import Contract, components_under, required_keys

# Each response TypedDict and the component schema of the API it mirrors.
RESPONSE_SCHEMAS: dict[type, str] = {
    traces.Trace: "TracePublic",
    traces.TraceList: "TracesPublic",
    traces.KernelStat: "KernelStatPublic",
    traces.KernelStats: "KernelStatsPublic",
    traces.TraceAccepted: "TraceAccepted",
    me.Me: "UserPublic",
    benchmarks.BenchRun: "BenchmarkRunPublic",
    benchmarks.BenchRunList: "BenchmarkRunsPublic",
    benchmarks.BenchSpec: "BenchmarkSpecPublic",
    benchmarks.BenchSpecList: "BenchmarkSpecsPublic",
    benchmarks.Runner: "RunnerPublic",
    benchmarks.RunnerList: "RunnersPublic",
    timeline.Step: "StepWindow",
    timeline.StepMarkerOption: "StepMarkerOption",
    timeline.Steps: "StepsPublic",
    timeline.Gap: "GapPublic",
    timeline.Gaps: "GapsPublic",
    query.QueryResult: "QueryResultPublic",
    query.QueryColumn: "QueryColumn",
    query.QueryView: "QueryView",
    query.QuerySchema: "QuerySchemaPublic",
    ranges.RangeStat: "RangeStat",
    ranges.Ranges: "RangesPublic",
    ranges.RangeDurations: "RangeDurationsPublic",
    ranges.GraphKernel: "GraphKernel",
    ranges.GraphReplay: "GraphReplay",
    ranges.GraphStat: "GraphStat",
    ranges.Graphs: "GraphsPublic",
    ranks.StepRow: "StepRow",
    ranks.StepSpread: "StepSpread",
    ranks.StepBreakdown: "StepBreakdownPublic",
    ranks.RankRow: "RankRow",
    ranks.Straggler: "Straggler",
    ranks.Ranks: "RanksPublic",
    ranks.CollectiveRow: "CollectiveRow",
    ranks.Collectives: "CollectivesPublic",
    ncu.NcuValue: "NcuValue",
    ncu.NcuOccupancy: "NcuOccupancy",
    ncu.NcuMemoryLevel: "NcuMemoryLevel",
    ncu.NcuRule: "NcuRule",
    ncu.NcuSectionMetric: "NcuSectionMetric",
    ncu.NcuSection: "NcuSection",
    ncu.NcuKernel: "NcuKernel",
    ncu.NcuLevelTime: "NcuLevelTime",
    ncu.NcuHierarchy: "NcuHierarchy",
    compile_view.CompilePhase: "CompilePhase",
    compile_view.CompileRun: "CompileRun",
    compile_view.CompileRegion: "CompileRegion",
    compile_view.Compile: "CompilePublic",
    ncu.NcuSections: "NcuSectionsPublic",
    memory_ops.MemoryDevice: "MemoryDevice",
    memory_ops.MemoryOpRow: "MemoryOpRow",
    memory_ops.MemoryOps: "MemoryOpsPublic",
    memory_ops.MemoryPeakRow: "MemoryPeakRow",
    memory_ops.MemoryPeak: "MemoryPeakPublic",
    operators.Operators: "OperatorsPublic",
    operators.OperatorItem: "OperatorPublic",
    operators.OperatorKernel: "OperatorKernel",
    operators.OperatorCallStack: "OperatorCallStack",
    operators.OperatorStacks: "OperatorStacksPublic",
    operators.StackTree: "StackTree",
    operators.StackNode: "StackNode",
}

# TypedDicts with no component of their own, and why.
CLIENT_ONLY: dict[type, str] = {
    traces.Device: "an item of TracePublic.devices, which the API types as a free-form object",
    benchmarks.ResultPoint: "an item of BenchmarkRunPublic.results, a free-form object",
    benchmarks.Metric: "an item of ResultPoint.metrics, inside that free-form object",
}

# What each call's route answers with, so a mapping above cannot point at a look-alike.
ROUTES: list[tuple[str, str, type]] = [
    ("get", "/api/v1/traces", traces.TraceList),
    ("get", "/api/v1/traces/{trace_id}", traces.Trace),
    ("get", "/api/v1/traces/{trace_id}/kernels", traces.KernelStats),
    ("post", "/api/v1/traces", traces.TraceAccepted),
    ("get", "/api/v1/me", me.Me),
    ("get", "/api/v1/benchmarks", benchmarks.BenchSpecList),
    ("get", "/api/v1/benchmarks/{name}", benchmarks.BenchSpec),
    ("get", "/api/v1/benchmarks/{name}/runs", benchmarks.BenchRunList),
    ("post", "/api/v1/benchmarks/{name}/runs", benchmarks.BenchRun),
    ("get", "/api/v1/benchmark-runs/{run_id}", benchmarks.BenchRun),
    ("get", "/api/v1/runners", benchmarks.RunnerList),
    ("get", "/api/v1/traces/{trace_id}/timeline/steps", timeline.Steps),
    ("put", "/api/v1/traces/{trace_id}/step-marker", timeline.Steps),
    ("get", "/api/v1/traces/{trace_id}/timeline/gaps", timeline.Gaps),
    ("post", "/api/v1/traces/{trace_id}/query", query.QueryResult),
    ("get", "/api/v1/traces/{trace_id}/query/schema", query.QuerySchema),
    ("get", "/api/v1/traces/{trace_id}/ranges", ranges.Ranges),
    ("get", "/api/v1/traces/{trace_id}/ranges/durations", ranges.RangeDurations),
    ("get", "/api/v1/traces/{trace_id}/graphs", ranges.Graphs),
    ("get", "/api/v1/traces/{trace_id}/steps/breakdown", ranks.StepBreakdown),
    ("get", "/api/v1/traces/{trace_id}/ranks", ranks.Ranks),
    ("get", "/api/v1/traces/{trace_id}/collectives", ranks.Collectives),
    ("get", "/api/v1/traces/{trace_id}/ncu", ncu.NcuSections),
    ("get", "/api/v1/traces/{trace_id}/compile", compile_view.Compile),
    ("get", "/api/v1/traces/{trace_id}/memory/ops", memory_ops.MemoryOps),
    ("get", "/api/v1/traces/{trace_id}/memory/peak", memory_ops.MemoryPeak),
    ("get", "/api/v1/traces/{trace_id}/operators", operators.Operators),
    ("get", "/api/v1/traces/{trace_id}/operators/stacks", operators.OperatorStacks),
]


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app()  # builds routers only, no I/O


@pytest.fixture(scope="module")
def openapi(app: FastAPI) -> dict[str, Any]:
    """The API's OpenAPI document, as `/openapi.json` serves it."""
    document: dict[str, Any] = app.openapi()
    return document


def _sent_partially(app: FastAPI, openapi: dict[str, Any]) -> frozenset[str]:
    """Components that some route serializes with fields left out (`exclude_*`)."""
    components = openapi["components"]["schemas"]
    partial: set[str] = set()
    for route in app.routes:
        if isinstance(route, APIRoute) and (
            route.response_model_exclude_unset
            or route.response_model_exclude_defaults
            or route.response_model_exclude_none
        ):
            operations = openapi["paths"][route.path_format]
            for method in route.methods or ():
                responses = operations[method.lower()]["responses"]
                partial |= components_under(responses, components)
    return frozenset(partial)


@pytest.fixture(scope="module")
def contract(app: FastAPI, openapi: dict[str, Any]) -> Contract:
    components = openapi["components"]["schemas"]
    return Contract(components, RESPONSE_SCHEMAS, _sent_partially(app, openapi))


def _area_modules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.iter_modules(dashboard.api.__path__)]
    return [importlib.import_module(f"dashboard.api.{name}") for name in names]


def _typed_dicts(module: ModuleType) -> set[type]:
    return {
        obj
        for _, obj in inspect.getmembers(module, typing.is_typeddict)
        if obj.__module__ == module.__name__
    }


@pytest.mark.parametrize(
    ("typed_dict", "component"), RESPONSE_SCHEMAS.items(), ids=lambda v: getattr(v, "__name__", v)
)
def test_response_type_matches_its_schema(
    contract: Contract, typed_dict: type, component: str
) -> None:
    assert contract.check(typed_dict, component) == []


def test_every_typed_dict_in_dashboard_api_is_mapped() -> None:
    found = {td for module in _area_modules() for td in _typed_dicts(module)}
    unmapped = {td.__qualname__ for td in found - RESPONSE_SCHEMAS.keys() - CLIENT_ONLY.keys()}
    assert not unmapped, f"add these to RESPONSE_SCHEMAS (or CLIENT_ONLY, with why): {unmapped}"
    assert RESPONSE_SCHEMAS.keys() | CLIENT_ONLY.keys() <= found  # no stale entries
    assert not RESPONSE_SCHEMAS.keys() & CLIENT_ONLY.keys()


@pytest.mark.parametrize(("method", "path", "typed_dict"), ROUTES, ids=lambda v: str(v))
def test_route_answers_with_the_mirrored_component(
    openapi: dict[str, Any], method: str, path: str, typed_dict: type
) -> None:
    responses = openapi["paths"][path][method]["responses"]
    ok = next(body for status, body in responses.items() if status.startswith("2"))
    ref = ok["content"]["application/json"]["schema"]["$ref"]
    assert ref == f"#/components/schemas/{RESPONSE_SCHEMAS[typed_dict]}"


# The checker fails on the changes it exists for: each edit of a copy of the real schema
# (or a wrong TypedDict) must be reported, naming the field.
Edit = Callable[[dict[str, Any]], None]


def _rename(component: str, old: str, new: str) -> Edit:
    def edit(schemas: dict[str, Any]) -> None:
        schema = schemas[component]
        schema["properties"][new] = schema["properties"].pop(old)
        schema["required"] = [new if k == old else k for k in schema.get("required", [])]

    return edit


def _set(component: str, field: str, prop: dict[str, Any]) -> Edit:
    def edit(schemas: dict[str, Any]) -> None:
        schemas[component]["properties"][field] = prop

    return edit


def _add_enum_value(component: str, value: str) -> Edit:
    def edit(schemas: dict[str, Any]) -> None:
        schemas[component]["enum"].append(value)

    return edit


@pytest.mark.parametrize(
    ("edit", "typed_dict", "expected"),
    [
        (_rename("TracePublic", "duration_ns", "duration"), traces.Trace, "Trace.duration_ns"),
        (_rename("StepWindow", "start_ns", "begin_ns"), timeline.Step, "Step.start_ns"),
        (_set("TracePublic", "size_bytes", {"type": "string"}), traces.Trace, "Trace.size_bytes"),
        (_set("KernelStatPublic", "count", {"type": "number"}), traces.KernelStat, "count"),
        (
            _set("GapPublic", "label", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
            timeline.Gap,
            "Gap.label",
        ),
        (
            _set("TracePublic", "warnings", {"type": "array", "items": {"type": "integer"}}),
            traces.Trace,
            "Trace.warnings[]",
        ),
        (
            _set(
                "TracePublic",
                "event_counts",
                {"type": "object", "additionalProperties": {"type": "string"}},
            ),
            traces.Trace,
            "Trace.event_counts{}",
        ),
        (
            _set(
                "TracesPublic",
                "items",
                {"type": "array", "items": {"$ref": "#/components/schemas/RunnerPublic"}},
            ),
            traces.TraceList,
            "TraceList.items[]: the API sends RunnerPublic",
        ),
        (_add_enum_value("TraceStatus", "cancelled"), traces.Trace, "'cancelled'"),
        (_set("GapPublic", "cause", {}), timeline.Gap, "Gap.cause"),
    ],
)
def test_checker_reports_a_changed_schema(
    openapi: dict[str, Any], edit: Edit, typed_dict: type, expected: str
) -> None:
    schemas = copy.deepcopy(openapi["components"]["schemas"])
    edit(schemas)
    problems = Contract(schemas, RESPONSE_SCHEMAS).check(typed_dict, RESPONSE_SCHEMAS[typed_dict])
    assert any(expected in problem for problem in problems), problems


class _RenamedField(TypedDict):
    id: str
    trace_name: str  # the API calls it `name`


class _WrongNesting(TypedDict):
    items: list[traces.KernelStat]  # TracesPublic's items are traces
    count: int


class _OptionalButTyped(TypedDict):
    id: str
    progress: NotRequired[dict[str, Any] | None]
    size_bytes: NotRequired[str]  # NotRequired does not excuse a wrong type


@pytest.mark.parametrize(
    ("typed_dict", "component", "expected"),
    [
        (_RenamedField, "TracePublic", "_RenamedField.trace_name: TracePublic has no field"),
        (_WrongNesting, "TracesPublic", "the API sends TracePublic, but KernelStat mirrors"),
        (_OptionalButTyped, "TracePublic", "_OptionalButTyped.size_bytes: the API may send"),
    ],
)
def test_checker_reports_a_wrong_typed_dict(
    contract: Contract, typed_dict: type, component: str, expected: str
) -> None:
    problems = contract.check(typed_dict, component)
    assert len(problems) == 1
    assert expected in problems[0]


def test_not_required_is_read_despite_postponed_annotations() -> None:
    assert required_keys(_OptionalButTyped) == {"id"}
    assert "progress" not in required_keys(traces.Trace)
    assert required_keys(traces.Device) == set()


def test_fields_a_route_may_leave_out_must_be_not_required(openapi: dict[str, Any]) -> None:
    """With `response_model_exclude_none/unset` on a route, a defaulted or nullable field
    may be missing from its JSON: the TypedDict must say NotRequired (as for `progress`)."""
    components = openapi["components"]["schemas"]
    partial = Contract(components, RESPONSE_SCHEMAS, frozenset({"TracePublic"}))
    problems = partial.check(traces.Trace, "TracePublic")
    flagged = {problem.split(":")[0] for problem in problems}
    assert {"Trace.error", "Trace.project", "Trace.duration_ns"} <= flagged
    assert not {"Trace.id", "Trace.progress", "Trace.size_bytes"} & flagged


class _Inner(BaseModel):
    x: int | None = None


class _Outer(BaseModel):
    inner: _Inner
    y: int = 0


class _Elsewhere(BaseModel):
    z: int


def test_components_sent_partially_are_found_with_their_nested_ones() -> None:
    tiny = FastAPI()

    @tiny.get("/outer", response_model_exclude_none=True)
    def outer() -> _Outer:
        return _Outer(inner=_Inner())

    @tiny.get("/elsewhere")
    def elsewhere() -> _Elsewhere:
        return _Elsewhere(z=1)

    assert _sent_partially(tiny, tiny.openapi()) == {"_Outer", "_Inner"}

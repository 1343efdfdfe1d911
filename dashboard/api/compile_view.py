"""The torch.compile call (`/traces/{id}/compile`) and its response shapes.

The TypedDicts mirror `backend.models.compile` (checked by tests/dashboard/test_api_contract.py).

Public surface: `get_compile` and the TypedDicts it returns.
"""

from __future__ import annotations

from typing import TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = ["Compile", "CompilePhase", "CompileRegion", "CompileRun", "get_compile", "has_compile"]


class CompilePhase(TypedDict):
    name: str
    count: int
    total_ns: int
    self_ns: int
    top_level: bool


class CompileRun(TypedDict):
    compile_id: str | None
    frame: int | None
    frame_compile: int | None
    start_ns: int
    dur_ns: int


class CompileRegion(TypedDict):
    name: str
    count: int
    total_ns: int


class Compile(TypedDict):
    trace_id: str
    phases: list[CompilePhase]
    phase_count: int
    compiles: list[CompileRun]
    graphs_compiled: int
    frames: list[int]
    recompiles: int
    recompiled_frames: list[int]
    graph_breaks: int | None
    regions: list[CompileRegion]
    compile_ns: int
    run_ns: int
    compile_pct: float | None
    note: str


def get_compile(client: ApiClient, trace_id: str, top: int = 10) -> Compile:
    """Compile phases, frame compiles and compile time against the span (`CompilePublic`)."""
    return cast(Compile, client.get(f"/traces/{trace_id}/compile", params={"top": top}))


def has_compile(body: Compile | None) -> bool:
    """Whether the trace shows torch.compile at all: phases, or compiled regions running."""
    return bool(body and (body["phases"] or body["regions"]))

"""API shapes of the torch.compile view (`/traces/{id}/compile`, issue #26 item 2).

Computed on request from stored events (`backend.services.analysis.compile_phases`).
"""

from sqlmodel import SQLModel


class CompilePhase(SQLModel):
    """One `dynamo_timed` phase, as `torch._dynamo.utils.compile_times()` names it."""

    name: str
    count: int
    total_ns: int  # inclusive: summed durations of its ranges
    self_ns: int  # minus the phases nested in it
    top_level: bool  # some range of it is inside no other phase: counted in compile time


class CompileRun(SQLModel):
    """One frame compile (`_compile.compile_inner`)."""

    compile_id: str | None  # "F/N" from torch's annotations; None where torch wrote none
    frame: int | None
    frame_compile: int | None  # N: 0 the first compile of the frame, > 0 a recompile
    start_ns: int
    dur_ns: int


class CompileRegion(SQLModel):
    """Running compiled code: `Torch-Compiled Region: F/N`, the guard check, the autograd
    function. Run time, not compile time."""

    name: str
    count: int
    total_ns: int


class CompilePublic(SQLModel):
    trace_id: str
    phases: list[CompilePhase]  # the top ones by total_ns
    phase_count: int  # distinct phases in the trace
    compiles: list[CompileRun]
    graphs_compiled: int  # frame compiles
    frames: list[int]  # frames compiled
    recompiles: int  # compiles with N > 0
    recompiled_frames: list[int]
    graph_breaks: int | None  # inferred: frames beyond the first; None without compile ids
    regions: list[CompileRegion]
    compile_ns: int  # union of top-level phases per thread, summed over threads
    run_ns: int  # the trace's span (first to last event)
    compile_pct: float | None
    note: str

"""API shapes of the Operators view (`/traces/{id}/operators` and `/operators/stacks`).

Computed on request from the stored events; no tables. Times are integer nanoseconds.
"""

from typing import Literal

from sqlmodel import SQLModel

OperatorSort = Literal[
    "count",
    "cpu_total_ns",
    "cpu_self_ns",
    "device_total_ns",
    "device_self_ns",
    "cpu_avg_ns",
    "device_avg_ns",
    "name",
]


class OperatorKernel(SQLModel):
    """GPU work (kernel, memcpy, memset) an op launched, itself or through its children."""

    name: str
    kind: str
    count: int
    total_ns: int


class OperatorCallStack(SQLModel):
    """Where an op was called from: the Python frames around its calls, outermost first."""

    frames: list[str]
    count: int
    cpu_total_ns: int


class OperatorPublic(SQLModel):
    """One op name (or name and input shapes), summed over its calls as key_averages does."""

    name: str
    kind: str  # cpu_op, or annotation for a record_function range
    input_shapes: str | None = None  # group=shape: the calls' `Input Dims`
    count: int
    cpu_total_ns: int
    cpu_self_ns: int
    device_total_ns: int
    device_self_ns: int
    cpu_avg_ns: int
    device_avg_ns: int
    kernels: list[OperatorKernel]
    call_stacks: list[OperatorCallStack] = []  # with_stack traces: top 3 by CPU time


class OperatorsPublic(SQLModel):
    trace_id: str
    group: Literal["name", "shape"]
    sort: str
    count: int  # rows matching `q`, before `limit`
    items: list[OperatorPublic]
    has_stacks: bool  # python_function events (with_stack) present
    has_modules: bool  # `nn.Module: ...` python_function events (with_modules) present


class StackNode(SQLModel):
    """One frame path of the icicle: `id` is the path, `parent` the path above it."""

    id: str
    parent: str
    name: str
    total_ns: int
    self_ns: int
    count: int


class StackTree(SQLModel):
    nodes: list[StackNode]
    reason: str | None = None  # why the tree is empty
    truncated: bool = False


class OperatorStacksPublic(SQLModel):
    trace_id: str
    stacks: StackTree  # CPU time by Python call stack (with_stack)
    modules: StackTree  # the nn.Module hierarchy (with_modules)

"""Operators-view API calls (`/traces/{id}/operators`, `/operators/stacks`) and their shapes.

Public surface: `get_operators`, `get_operator_stacks`, and the TypedDicts they return.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "OperatorCallStack",
    "OperatorItem",
    "OperatorKernel",
    "OperatorStacks",
    "Operators",
    "StackNode",
    "StackTree",
    "get_operator_stacks",
    "get_operators",
]

MAX_ROWS = 5000  # the API's own limit


class OperatorKernel(TypedDict):
    name: str
    kind: str
    count: int
    total_ns: int


class OperatorCallStack(TypedDict):
    frames: list[str]
    count: int
    cpu_total_ns: int


class OperatorItem(TypedDict):
    name: str
    kind: str
    input_shapes: str | None
    count: int
    cpu_total_ns: int
    cpu_self_ns: int
    device_total_ns: int
    device_self_ns: int
    cpu_avg_ns: int
    device_avg_ns: int
    kernels: list[OperatorKernel]
    call_stacks: list[OperatorCallStack]


class Operators(TypedDict):
    trace_id: str
    group: str
    sort: str
    count: int
    items: list[OperatorItem]
    has_stacks: bool
    has_modules: bool


class StackNode(TypedDict):
    id: str
    parent: str
    name: str
    total_ns: int
    self_ns: int
    count: int


class StackTree(TypedDict):
    nodes: list[StackNode]
    reason: str | None
    truncated: bool


class OperatorStacks(TypedDict):
    trace_id: str
    stacks: StackTree
    modules: StackTree


def get_operators(client: ApiClient, trace_id: str, group: str = "name", q: str = "") -> Operators:
    """Every op row (up to the API's limit) by device time, grouped by name or shape."""
    params: dict[str, Any] = {"limit": MAX_ROWS, "group": group}
    if q:
        params["q"] = q
    return cast(Operators, client.get(f"/traces/{trace_id}/operators", params=params))


def get_operator_stacks(client: ApiClient, trace_id: str) -> OperatorStacks:
    """The Python-stack and module trees (each empty with a reason when absent)."""
    return cast(OperatorStacks, client.get(f"/traces/{trace_id}/operators/stacks"))

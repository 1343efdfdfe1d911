"""The Operators panel builder: rows, empty states, the selected op's kernels and call
sites, and hostile names kept as text."""

from __future__ import annotations

from typing import Any, cast

from dash import html

from dashboard.api.operators import OperatorItem, Operators
from dashboard.components.operators_panel import op_kernels, operator_rows, operators_panel
from dashboard.figures.operators import stack_icicle_figure

HOSTILE = "<img src=x onerror=alert(1)>"


def _item(name: str, **extra: Any) -> OperatorItem:
    base = {
        "name": name, "kind": "cpu_op", "input_shapes": "[[2,3]]", "count": 2,
        "cpu_total_ns": 12_345, "cpu_self_ns": 2_001, "device_total_ns": 7_000,
        "device_self_ns": 7_000, "cpu_avg_ns": 6_172, "device_avg_ns": 3_500,
        "kernels": [{"name": HOSTILE, "kind": "kernel", "count": 2, "total_ns": 7_000}],
        "call_stacks": [],
    }  # fmt: skip
    return cast(OperatorItem, base | extra)


def _ops(items: list[OperatorItem]) -> Operators:
    return {"trace_id": "t", "group": "name", "sort": "device_total_ns", "count": len(items),
            "items": items, "has_stacks": False, "has_modules": False}  # fmt: skip


def _texts(component: Any) -> list[str]:
    out: list[str] = []
    if isinstance(component, str):
        return [component]
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if isinstance(child, str):
            out.append(child)
        elif child is not None:
            out.extend(_texts(child))
    return out


def test_rows_keep_the_api_ns_and_kernels() -> None:
    (row,) = operator_rows([_item("aten::mm", kind="annotation")])
    assert row["cpu_total_ns"] == 12_345 and row["cpu_self_ns"] == 2_001
    assert row["device_total_ns"] == 7_000 and row["count"] == 2
    assert row["kind"] == "range" and row["kernels"][0]["name"] == HOSTILE


def test_selected_op_shows_its_kernels_and_call_sites_as_text() -> None:
    sites = [{"frames": ["train.py(3): <module>", HOSTILE], "count": 2, "cpu_total_ns": 9}]
    (row,) = operator_rows([_item(HOSTILE, call_stacks=sites)])
    texts = _texts(op_kernels(row, "p"))
    assert f"Kernels launched by {HOSTILE}" in texts and HOSTILE in texts
    assert "train.py(3): <module>" in texts
    empty = operator_rows([_item("aten::view", kernels=[])])[0]
    assert "This op launched no GPU work." in _texts(op_kernels(empty, "p"))
    assert "Select an op" in _texts(op_kernels(None, "p"))[0]


def test_empty_and_failed_states() -> None:
    assert "no CPU operators" in _texts(operators_panel(_ops([]), None, "name", "", "p"))[0]
    assert "Could not load" in _texts(operators_panel(None, None, "name", "", "p"))[0]
    panel = operators_panel(_ops([_item("aten::mm")]), None, "shape", "", "p")
    assert isinstance(panel, html.Div)
    assert any("with_stack" in t for t in _texts(panel))


def test_icicle_escapes_names_and_says_why_it_is_empty() -> None:
    tree = {"nodes": [{"id": "n0", "parent": "", "name": HOSTILE, "total_ns": 10,
                       "self_ns": 10, "count": 1}], "reason": None, "truncated": False}  # fmt: skip
    fig = stack_icicle_figure(cast(Any, tree))
    assert fig.data[0].labels == ("&lt;img src=x onerror=alert(1)&gt;",)
    empty = stack_icicle_figure(cast(Any, {"nodes": [], "reason": "no frames", "truncated": False}))
    assert empty.layout.annotations[0].text == "no frames"

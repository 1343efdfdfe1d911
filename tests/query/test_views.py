"""The views answer what independent sources say: the `/kernels` endpoint (computed at
ingest, in Python, not by SQL), and joins over the stored events done in Python here."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from backend.core.db import get_engine
from dashboard.components.query_examples import EXAMPLES
from tests.factories import stored_events
from tests.query.conftest import World

TOP_KERNELS = """SELECT name, count(*) AS count, sum(dur_ns) AS total_ns
FROM kernels GROUP BY name ORDER BY total_ns DESC, name LIMIT 10"""
EVERY_TRACE = [
    "h200_gpt_12l", "h200_train_step", "nsys_nccl_2gpu", "nsys_train_step", "nsys_copies",
    "rocprof_v1", "corpus_h200_nsys", "corpus_h200_torch", "ddp",
]  # fmt: skip


def _trace(world: World, name: str) -> str:
    if name not in world.traces:
        pytest.skip(f"{name}: not in this checkout (PERFDASH_TEST_CORPUS)")
    return name


@pytest.mark.parametrize("name", EVERY_TRACE)
def test_top_10_kernels_by_sql_equal_the_kernels_endpoint(world: World, name: str) -> None:
    trace = world.traces[_trace(world, name)]
    stats = world.client.get(f"/api/v1/traces/{trace}/kernels", params={"limit": 10}).json()
    expected = sorted(((k["name"], k["count"], k["total_ns"]) for k in stats["items"]),
                      key=lambda k: (-k[2], k[0]))  # fmt: skip
    got = [tuple(r) for r in world.query(name, TOP_KERNELS)["rows"]]
    assert got == expected and len(got) == min(10, stats["count"]) > 0


@pytest.mark.parametrize("example", sorted(EXAMPLES))
@pytest.mark.parametrize("name", EVERY_TRACE)
def test_every_example_runs_on_every_trace(world: World, name: str, example: str) -> None:
    body = world.query(_trace(world, name), EXAMPLES[example])
    assert body["columns"]


def test_examples_find_rows_where_the_trace_has_them(world: World) -> None:
    """Each example has a trace on which it answers something."""
    found = {
        "Top kernels": "h200_gpt_12l",
        "Launch delay percentiles": "h200_gpt_12l",
        "Kernels overlapping NCCL": "ddp",
        "Pageable copies": "h200_train_step",
        "Ops by self time": "h200_gpt_12l",
    }
    assert set(found) == set(EXAMPLES)
    for example, name in found.items():
        assert world.query(name, EXAMPLES[example])["rows"], example


def _threads(events: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[tuple[int, int]]]:
    ops: dict[tuple[Any, ...], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e["kind"] == "cpu_op":
            ops[(e["rank"], e["pid"], e["tid"])].append(
                (e["start_ns"], e["start_ns"] + e["dur_ns"])
            )
    return ops


def _union_ns(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s >= end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


@pytest.mark.parametrize("name", ["h200_gpt_12l", "h200_train_step", "ddp"])
def test_self_times_add_up_to_the_time_some_op_was_open(world: World, name: str) -> None:
    """With ops nested on each thread, every instant an op is open belongs to exactly one
    innermost op: the self times sum to the union of the ops' intervals."""
    sql = EXAMPLES["Ops by self time"].replace("LIMIT 20", "")
    rows = world.query(name, sql, limit=100_000)["rows"]
    events = stored_events(get_engine(), world.traces[name])
    expected = sum(_union_ns(v) for v in _threads(events).values())
    assert sum(r[2] for r in rows) == expected
    assert all(0 <= r[2] <= r[3] for r in rows)
    assert sum(r[1] for r in rows) == sum(e["kind"] == "cpu_op" for e in events)


def test_kernels_overlapping_nccl_equal_a_python_sweep(world: World) -> None:
    events = [e for e in stored_events(get_engine(), world.traces["ddp"]) if e["kind"] == "kernel"]
    nccl = [e for e in events if "nccl" in e["name"].lower()]
    expected: dict[str, int] = defaultdict(int)
    for k in events:
        if "nccl" not in k["name"].lower() and any(
            n["device"] == k["device"] and n["rank"] == k["rank"]
            and n["start_ns"] < k["start_ns"] + k["dur_ns"]
            and k["start_ns"] < n["start_ns"] + n["dur_ns"]
            for n in nccl
        ):  # fmt: skip
            expected[k["name"]] += k["dur_ns"]
    sql = EXAMPLES["Kernels overlapping NCCL"].replace("LIMIT 20", "")
    got = {r[0]: r[2] for r in world.query("ddp", sql)["rows"]}
    assert got == dict(expected) and got


@pytest.mark.parametrize("name", ["h200_train_step", "nsys_nccl_2gpu"])
def test_flows_pair_each_gpu_event_with_its_runtime_call(world: World, name: str) -> None:
    events = stored_events(get_engine(), world.traces[name])
    calls: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in sorted(events, key=lambda e: (e["start_ns"], e["id"]), reverse=True):
        if e["kind"] == "runtime":
            calls[(e["rank"], e["correlation"])] = e  # the earliest call wins
    expected = []
    for e in events:
        call = calls.get((e["rank"], e["correlation"]))
        if e["kind"] in ("kernel", "memcpy", "memset") and call is not None:
            expected.append((call["id"], e["id"], e["start_ns"] - call["start_ns"]))
    expected.sort()
    got = world.query(name, "SELECT launch_id, gpu_id, launch_delay_ns FROM flows ORDER BY 1, 2",
                      limit=100_000)["rows"]  # fmt: skip
    assert [tuple(r) for r in got] == expected and expected


@pytest.mark.parametrize(
    ("name", "registers", "shared"),
    [
        ("h200_train_step", "registers per thread", "shared memory"),
        ("nsys_nccl_2gpu", "registers per thread", "shared memory"),
        ("rocprof_v1", "arch_vgpr", "lds_bytes"),
    ],
)
def test_kernel_geometry_comes_from_the_stored_args(
    world: World, name: str, registers: str, shared: str
) -> None:
    events = stored_events(get_engine(), world.traces[name])
    expected = sorted(
        (e["id"], *e["args"]["grid"], *e["args"]["block"], e["args"].get(registers),
         e["args"].get(shared))
        for e in events if e["kind"] == "kernel"
    )  # fmt: skip
    got = world.query(
        name,
        "SELECT id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
        "shared_memory_bytes FROM kernels ORDER BY id",
    )["rows"]
    assert [tuple(r) for r in got] == expected and expected


def test_counters_hold_the_allocator_values(world: World) -> None:
    events = stored_events(get_engine(), world.traces["h200_train_step"])
    memory = [e for e in events if e["kind"] == "memory"]
    expected = sorted((e["id"], e["args"]["Total Allocated"]) for e in memory)
    got = world.query(
        "h200_train_step",
        "SELECT event_id, value FROM counters WHERE counter = 'Total Allocated' ORDER BY 1",
    )["rows"]
    assert [tuple(r) for r in got] == expected and expected


def test_copies_read_kinds_from_names_and_args(world: World) -> None:
    sql = "SELECT copy_kind, src_kind, dst_kind, count(*) FROM copies GROUP BY ALL ORDER BY ALL"
    kineto = world.query("h200_train_step", sql)["rows"]
    nsys = world.query("nsys_copies", sql)["rows"]
    assert ["HtoD", "Pageable", "Device"] in [r[:3] for r in kineto]
    assert {r[1] for r in nsys} >= {"Pinned", "Pageable"}


def test_args_unnest_every_attribute(world: World) -> None:
    events = stored_events(get_engine(), world.traces["h200_train_step"])
    expected = sum(len(e["args"]) for e in events if e["args"])
    assert world.query("h200_train_step", "SELECT count(*) FROM args")["rows"] == [[expected]]

"""Corpus facts (../shared/corpus/EXPECTATIONS.md) that concern summaries; skipped when absent."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from ingest import parse_file
from ingest.summary import SummaryBuilder

KINETO = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "kineto"


def _summary(name: str) -> dict[str, Any]:
    path = KINETO / name
    if not path.exists():
        pytest.skip(f"corpus file {name} is absent")
    parsed = parse_file(path)
    builder = SummaryBuilder()
    for event in parsed.events:
        builder.add(event)
    return builder.finish(parsed.header)


def test_nccl_collectives_counts_and_message_bytes() -> None:
    summary = _summary("hta__nccl_data_rank0_of_2.json.gz")
    collectives = {c["collective"]: c for c in summary["communication"]["collectives"]}
    assert summary["communication"]["kernels"] == 21  # 15 allreduce + 6 broadcast
    assert (collectives["allreduce"]["count"], collectives["broadcast"]["count"]) == (15, 6)
    with gzip.open(KINETO / "hta__nccl_data_rank0_of_2.json.gz", "rt") as f:
        raw = json.load(f)["traceEvents"]
    allreduce = [
        e["args"]
        for e in raw
        if e.get("cat") == "kernel" and e["args"].get("Collective name") == "allreduce"
    ]
    assert collectives["allreduce"]["bytes"] == sum(4 * a["In msg nelems"] for a in allreduce)
    assert collectives["allreduce"]["max_in_msg_nelems"] >= 2049000
    assert collectives["allreduce"]["group_sizes"] == [2]
    assert collectives["allreduce"]["dtypes"] == ["Float"]
    time = summary["devices"][0]["time"]
    assert 0 < time["comm_compute_overlap_pct"] < 100


def test_six_streams_and_four_memory_op_kinds() -> None:
    summary = _summary("hta__negative_queue_length_rank0_of_16.json.gz")
    (device,) = summary["devices"]
    assert device["streams"] == [7, 25, 27, 84, 285, 363]
    counts: dict[str, int] = {}
    for kind in summary["transfers"]["kinds"]:
        label = f"Memcpy {kind['kind']}" if kind["op"] == "memcpy" else "Memset"
        counts[label] = counts.get(label, 0) + kind["count"]
    assert counts == {"Memcpy DtoD": 1280, "Memset": 277, "Memcpy HtoD": 80, "Memcpy DtoH": 30}
    assert summary["launch"]["unmatched"] > 0  # some kernels have no launching call here
    assert summary["launch"]["delay"]["count"] == summary["launch"]["matched"]


@pytest.mark.parametrize(
    ("name", "steps"),
    [
        ("hta__amd_mi250_rocm6.2_minitoy_train.json.gz", [1, 2]),
        ("hta__sampled_rank-0.json.gz", [551, 552]),
    ],
)
def test_profiler_steps(name: str, steps: list[int]) -> None:
    assert [s["step"] for s in _summary(name)["steps"]["steps"]] == steps


def test_rocm_trace_device_and_kernels() -> None:
    summary = _summary("hta__amd_mi250_rocm6.2_minitoy_train.json.gz")
    (device,) = summary["devices"]
    assert (device["device"], device["kernels"]) == (2, 14)
    assert summary["launch"]["matched"] == 14  # hip* runtime calls under cuda_runtime


def test_rank_from_distributed_info_keys_the_device() -> None:
    summary = _summary("hta__df_index_resolver_rank1_of_2.json.gz")
    assert [(d["rank"], d["device"]) for d in summary["devices"]] == [(1, 1)]
    assert summary["memory"][0]["device"] == 1
    assert summary["memory"][0]["peak_allocated_bytes"] > 0

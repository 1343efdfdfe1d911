"""A real 2-GPU DDP job (two H200s, NCCL), its rank files read as one multi-rank trace.

The fixture and `ddp_nccl_expect.json` (NCCL kernel count and total ns per rank, summed from
each rank's own JSON with decimals) come from `tests/data/make_ddp_trace.py`."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from ingest import parse_file
from ingest.aggregate import TraceAggregator

DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"


@pytest.fixture(scope="module")
def ddp_summary(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], object]:
    archive = tmp_path_factory.mktemp("ddp") / "job.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for rank in (0, 1):
            name = f"ddp_rank{rank}.pt.trace.json.gz"
            tf.add(DDP / name, f"run/{name}")
    parsed = parse_file(archive)
    aggregator = TraceAggregator()
    aggregator.drain(parsed.events)
    return aggregator.summary(parsed.header), parsed.header


def test_both_ranks_are_one_trace(ddp_summary: tuple[dict[str, object], object]) -> None:
    _, header = ddp_summary
    assert header.world_size == 2  # type: ignore[attr-defined]
    assert [r["rank"] for r in header.metadata["ranks"]] == [0, 1]  # type: ignore[attr-defined]
    assert {d.properties["rank"] for d in header.devices} == {0, 1}  # type: ignore[attr-defined]


def test_comm_time_and_overlap_per_rank(ddp_summary: tuple[dict[str, object], object]) -> None:
    summary, _ = ddp_summary
    expect = json.loads((DDP / "ddp_nccl_expect.json").read_text())
    devices = {d["rank"]: d for d in summary["devices"]}  # type: ignore[attr-defined]
    assert set(devices) == {0, 1}
    for rank in (0, 1):
        time = devices[rank]["time"]
        assert time["communication_ns"] == expect[f"rank{rank}"]["nccl_total_ns"]
        assert 0 <= time["comm_compute_overlap_pct"] <= 100


def test_nccl_collectives_carry_message_sizes(
    ddp_summary: tuple[dict[str, object], object],
) -> None:
    summary, _ = ddp_summary
    expect = json.loads((DDP / "ddp_nccl_expect.json").read_text())
    (allreduce,) = summary["communication"]["collectives"]  # type: ignore[index]
    assert allreduce["collective"] == "allreduce"
    assert allreduce["count"] == sum(v["nccl_kernels"] for v in expect.values())
    assert allreduce["max_msg_bytes"] > 0
    assert allreduce["group_sizes"] == [2]

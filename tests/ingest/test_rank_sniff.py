"""`sniff_rank` reads a rank file's header only: real DDP ranks, and hostile or broken heads."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from ingest.errors import UnsupportedFormatError
from ingest.rank_sniff import HEAD_BYTES, sniff_rank

DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"


@pytest.mark.parametrize("path", sorted(DDP.glob("ddp_rank*.pt.trace.json.gz")), ids=str)
def test_the_ddp_ranks_say_what_their_own_json_says(path: Path) -> None:
    raw = path.read_bytes()
    info = json.loads(gzip.decompress(raw))["distributedInfo"]
    stream = io.BytesIO(raw)
    head = sniff_rank(stream, path.name)
    assert (head.rank, head.world_size) == (info["rank"], info["world_size"])
    assert stream.tell() == 0  # rewound for the bundle that stores it


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "empty"),
        (b" \n\t", "empty"),
        (b"\x1f\x8b", "truncated"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 64, "corrupt"),
        (b"SQLite format 3\x00" + b"\x00" * 100, "not a torch.profiler"),
        (b"step,loss\n1,0.5\n", "not a torch.profiler"),
        (b'{"hello": 1}', "not a torch.profiler"),
    ],
)
def test_what_is_not_a_rank_file_is_refused_by_name(data: bytes, says: str) -> None:
    with pytest.raises(UnsupportedFormatError, match=f"^bad.bin: .*{says}"):
        sniff_rank(io.BytesIO(data), "bad.bin")


def test_a_huge_header_is_read_only_to_its_cap_and_the_rank_past_it_is_unknown() -> None:
    padding = b" " * (HEAD_BYTES * 64)  # 16 MiB of blanks, a few KiB of gzip
    doc = b'{"schemaVersion": 1,' + padding + b'"distributedInfo": {"rank": 1}}'
    head = sniff_rank(io.BytesIO(gzip.compress(doc)), "padded.json.gz")
    assert (head.rank, head.world_size) == (None, None)


@pytest.mark.parametrize(
    ("dist", "rank", "world"),
    [
        (b'{"rank": 2, "pg_config": [{"ranks": [0, 1]}]}', 2, None),
        (b'{"pg_config": [{"rank": 9}], "rank": 1}', None, None),  # nested first: unknown
        (b'{"rank": "x", "world_size": 4}', None, 4),
        (b"{}", None, None),
    ],
)
def test_distributed_info_is_read_from_its_own_keys(
    dist: bytes, rank: int | None, world: int | None
) -> None:
    doc = b'{"schemaVersion": 1, "distributedInfo": ' + dist + b', "traceEvents": []}'
    head = sniff_rank(io.BytesIO(doc), "r.json")
    assert (head.rank, head.world_size) == (rank, world)

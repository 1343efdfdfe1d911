"""Concatenated gzip members (as `cat a.gz b.gz` or an appending writer makes) read whole,
wherever a member ends relative to the reader's chunks.

Found by the load test: a 47 MB trace with a small second member spun forever at 100 % CPU,
because its first member ended while the reader was draining `unconsumed_tail`, and the
ended inflater never consumed those bytes.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from ingest._io import ByteStream, read_all


def _members(rng: random.Random) -> list[bytes]:
    """Highly compressible members (so the output cap is hit mid-input), of varied sizes."""
    sizes = [rng.randrange(0, 300_000) for _ in range(rng.randrange(2, 5))]
    return [(f'{{"m": {i}, "pad": "' + "ab" * (n // 2) + '"}\n').encode() for i, n in
            enumerate(sizes)]  # fmt: skip


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", range(40))
def test_every_member_is_read_once_wherever_it_ends(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    members = _members(rng)
    path = tmp_path / "multi.json.gz"
    path.write_bytes(
        b"".join(gzip.compress(m, compresslevel=rng.choice((1, 6, 9))) for m in members)
    )
    chunk = rng.choice((4096, 8192, 65536, 1 << 22))
    stream = ByteStream(path, max_bytes=1 << 30, source="multi", chunk_size=chunk)
    assert b"".join(stream.chunks()) == b"".join(members)
    assert stream.decompressed == sum(map(len, members))


@pytest.mark.timeout(60)
def test_a_small_member_after_a_large_one_is_read(tmp_path: Path) -> None:
    """The load test's case: a whitespace member after a large JSON member."""
    body = b'{"traceEvents": [' + b",".join(b'{"ph": "X", "ts": %d}' % i for i in range(200_000))
    body += b"]}\n"
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(body, compresslevel=3) + gzip.compress(b"\n \n"))
    assert read_all(path) == body + b"\n \n"

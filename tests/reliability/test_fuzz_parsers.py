"""Property-based fuzzing of every parser through `ingest.parse_file`.

Inputs: random bytes behind each format's magic, real fixtures from `tests/data` with
random mutations (byte flips, deletions, insertions, duplicated ranges; gzip files are
mutated inside and re-compressed), and truncations at every kind of offset. The property:
parsing either succeeds or raises an `IngestError` (what the worker turns into a `failed`
trace); nothing else escapes, no case passes the deadline, and decompression stays under
`max_bytes`. CI runs a few dozen cases per property; `PERFDASH_FUZZ_EXAMPLES=N` runs N
(the long-run counts are in docs/RELIABILITY.md). Hostile but well-formed traces (huge or
NUL names, far times) are stored through the real ingest path in `test_fuzz_hostile.py`.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import tracemalloc
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ingest import IngestError, parse_file

DATA = Path(__file__).resolve().parents[1] / "data"
SEEDS = [
    DATA / "torch" / "h200_train_step.pt.trace.json.gz",
    DATA / "ddp" / "ddp_rank0.pt.trace.json.gz",
    DATA / "nsys" / "copies.sqlite",
    DATA / "ncu" / "gemm_elementwise_summary.csv",
    DATA / "ncu" / "gemm_elementwise_details.csv",
    DATA / "rocprof" / "v1" / "results.csv",
    DATA / "rocprof" / "v1" / "results.stats.csv",
    DATA / "rocprof" / "4242_results.json",
    DATA / "rocprof" / "4242_results.db",
    DATA / "rocprof" / "v2" / "results_kernel_trace.csv",
    DATA / "rocprof" / "v3_old_kernel_trace.csv",
    DATA / "rocprof" / "compute_workload.zip",
    DATA / "rocprof" / "v3_run.tar.gz",
    DATA / "rocprof" / "v3_run.zip",
]
MAGICS = [
    b"",
    b'{"traceEvents": [',
    b'{"schemaVersion": 1, "deviceProperties": [',
    b"SQLite format 3\x00",
    b"PK\x03\x04",
    b"\x1f\x8b\x08\x00",
    b'"ID","Process ID","Process Name","Host Name","Kernel Name"',
    b"Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds",
    b"==PROF== Connected to process",
]
SUFFIXES = ["", ".json", ".json.gz", ".csv", ".sqlite", ".db", ".zip", ".tar.gz", ".nsys-rep"]
MAX_BYTES = 32 * 1024 * 1024  # the decompression cap (MAX_DECOMPRESSED_BYTES) under fuzz
EXAMPLES = int(os.environ.get("PERFDASH_FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=10),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_SEED_BYTES = {path: path.read_bytes() for path in SEEDS}


def _suffix(path: Path) -> str:
    return "".join(path.suffixes[-2:]) if path.name.endswith(".gz") else path.suffix


def _parse(data: bytes, suffix: str) -> None:
    """Parse `data` as a file named `*suffix`; only IngestError may come out."""
    with tempfile.TemporaryDirectory(prefix="perfdash-fuzz-") as folder:
        path = Path(folder) / f"fuzz{suffix}"
        path.write_bytes(data)
        try:
            parsed = parse_file(path, max_bytes=MAX_BYTES)
            events = sum(1 for _ in parsed.events)
        except IngestError as e:
            assert str(e), "an IngestError must say what was wrong"
            event(f"{type(e).__name__}: {str(e)[:48]}")  # outcome tallies for RELIABILITY.md
        else:
            event(f"parsed as {parsed.header.format.value}, {'some' if events else 'no'} events")


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[bytes, str]:
    seed = draw(st.sampled_from(SEEDS))
    raw = _SEED_BYTES[seed]
    zipped = seed.name.endswith(".json.gz")
    data = bytearray(gzip.decompress(raw) if zipped else raw)
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        # sqlite pages only stay readable when the size holds: flip bytes in place there
        ops = (
            ["flip"]
            if seed.suffix in (".sqlite", ".db")
            else ["flip", "delete", "insert", "duplicate"]
        )
        op = draw(st.sampled_from(ops))
        span = draw(st.integers(1, 64))
        if op == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif op == "delete":
            del data[at : at + span]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=span))
        else:
            data[at:at] = data[at : at + span]
    out = gzip.compress(bytes(data), compresslevel=1) if zipped else bytes(data)
    return out, _suffix(seed)


@FUZZ
@given(
    magic=st.sampled_from(MAGICS),
    body=st.binary(max_size=4096),
    suffix=st.sampled_from(SUFFIXES),
)
def test_random_bytes_only_raise_ingest_errors(magic: bytes, body: bytes, suffix: str) -> None:
    _parse(magic + body, suffix)


@FUZZ
@given(case=_mutated())
def test_mutated_real_traces_only_raise_ingest_errors(case: tuple[bytes, str]) -> None:
    _parse(*case)


@FUZZ
@given(seed=st.sampled_from(SEEDS), fraction=st.floats(0.0, 1.0, exclude_max=True))
def test_truncated_real_traces_only_raise_ingest_errors(seed: Path, fraction: float) -> None:
    raw = _SEED_BYTES[seed]
    _parse(raw[: int(len(raw) * fraction)], _suffix(seed))


def test_a_gzip_bomb_stops_at_max_bytes_with_bounded_memory() -> None:
    bomb = gzip.compress(b'{"traceEvents": [' + b" " * (256 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 1024 * 1024
    tracemalloc.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "bomb.json.gz"
            path.write_bytes(bomb)
            try:
                for _ in parse_file(path, max_bytes=MAX_BYTES).events:
                    pass
            except IngestError as e:
                assert "MAX_DECOMPRESSED_BYTES" in str(e)
            else:
                raise AssertionError("a 256 MiB gzip bomb parsed under a 32 MiB cap")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"peak {peak} bytes while refusing the bomb"


def test_a_huge_key_before_trace_events_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 25: `traceEvents` behind a 256 MiB string (a 1 GiB one grew the worker by
    3 GB). Only the first `HEAD_LIMIT` bytes are searched, under a cap that would allow
    the whole file, so the refusal comes from the head bound, not from `max_bytes`."""
    path = tmp_path / "late.json.gz"
    with gzip.open(path, "wb", compresslevel=6) as out:  # written in MiB pieces: small on disk
        out.write(b'{"schemaVersion": 1, "note": "')
        block = b"a" * (1 << 20)
        for _ in range(256):
            out.write(block)
        out.write(b'", "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]}')
    assert path.stat().st_size < 1024 * 1024
    tracemalloc.start()
    try:
        try:
            for _ in parse_file(path, max_bytes=1 << 30).events:
                pass
        except IngestError as e:
            assert "'traceEvents' array does not start within the first 16 MB" in str(e)
        else:
            raise AssertionError("a trace with a 256 MiB key before traceEvents was read")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 96 * 1024 * 1024, f"peak {peak} bytes while refusing a 256 MiB head"

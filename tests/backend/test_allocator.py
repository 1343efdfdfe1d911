"""The pinned mmap threshold really gives freed multi-MB buffers back to the OS (glibc).

Each case runs in a fresh interpreter: one freed 8 MB block makes glibc raise its threshold,
then 2 MB buffers interleaved with long-lived small malloc blocks (as a parse interleaves
its pieces with the objects it keeps) are freed. Unpinned, they were heap memory pinned by
the small blocks and RSS stays up; pinned, they were mmapped and RSS falls back.
"""

from __future__ import annotations

import ctypes.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import ctypes, json, sys
from backend.core.allocator import pin_mmap_threshold
tuned = pin_mmap_threshold() if sys.argv[1] == "pin" else False
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
big = ctypes.create_string_buffer(8 << 20)
del big  # glibc now serves blocks under 8 MB from the heap unless the threshold is pinned
base = rss_mb()
buffers, kept = [], []
for _ in range(40):
    buffers.append(ctypes.create_string_buffer(2 << 20))
    kept.append(ctypes.create_string_buffer(1024))  # outlives the buffers, as parsed rows do
peak = rss_mb()
del buffers
print(json.dumps({"tuned": tuned, "grown": peak - base, "left": rss_mb() - base}))
"""


def _run(mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode], cwd=REPO, capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None,
    reason="glibc's mallopt and /proc are Linux-only",
)
def test_pinned_threshold_returns_freed_buffers() -> None:
    sliding, pinned = _run("slide"), _run("pin")
    assert pinned["tuned"] and not sliding["tuned"]
    assert sliding["grown"] > 60 and pinned["grown"] > 60, "80 MB were touched in both"
    assert sliding["left"] > 60, "unpinned, the freed heap buffers stay resident"
    assert pinned["left"] < 10, "pinned, they were mmapped and went back on free"

"""Small memory snapshot pickles that expand to a large cost are refused cheaply.

Each pickle is generated here, a few hundred bytes to 200 KB, and read in a fresh Python
(`tests/bounded.py`) that measures its peak memory and CPU time. Before the reader counted
what it built, the first took 28 s and 1 GB and the memo reuse 44 s and 1.8 GB; the bounds
below are several times what the refusal costs and far under those.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.bounded import measure

# Each script builds `doc`, the snapshot an attacker pickles; its memo shares objects.
ATTACKS = {
    "frame name: a list holding itself twice, 26 deep": """
        level = ["x"]
        for _ in range(26):
            level = [level, level]
        frame = {"name": level, "filename": "train.py", "line": 1}
        entry = {"action": "alloc", "addr": 1, "size": 1, "frames": [frame]}
        doc = {"segments": [], "device_traces": [[entry]]}
    """,
    "frame name: one 139 KB string shared by every frame": """
        frames = [{"name": "x" * 139_000, "filename": "train.py", "line": 1}] * 16
        entry = {"action": "alloc", "addr": 1, "size": 1, "frames": frames}
        doc = {"segments": [], "device_traces": [[entry] * 300]}
    """,
    "frame name: a 4000-character string shared 6.4M times": """
        name = "x" * 4000
        frames = [{"name": name, "filename": "train.py", "line": i} for i in range(64)]
        entry = {"action": "alloc", "addr": 1, "size": 1, "frames": frames}
        doc = {"segments": [], "device_traces": [[entry] * 100_000]}
    """,
    "memo reuse: one block list in 5000 segments": """
        block = {"address": 1, "size": 512, "state": "active_allocated", "frames": []}
        segment = {"device": 0, "address": 0, "total_size": 1 << 20, "blocks": [block] * 5000}
        doc = {"segments": [segment] * 5000, "device_traces": []}
    """,
    "memo reuse: one entry list as 5000 devices' history": """
        entry = {"action": "alloc", "addr": 1, "size": 512, "time_us": 1, "frames": []}
        doc = {"segments": [], "device_traces": [[entry] * 5000] * 5000}
    """,
    "views: 700 blocks with distinct 16-frame stacks of long names": """
        name = "x" * 4000
        def stack(b):
            return [{"name": name, "filename": "t.py", "line": b * 16 + i} for i in range(16)]
        blocks = [
            {"address": b * 512, "size": 512, "state": "active_allocated", "frames": stack(b)}
            for b in range(700)
        ]
        segment = {"device": 0, "address": 0, "total_size": 700 * 512, "blocks": blocks}
        doc = {"segments": [segment], "device_traces": []}
    """,
}
# What ingest does with an uploaded snapshot: load it, then build the stored views.
READ = """
import pickle
data = pickle.dumps(doc, protocol=4)
assert len(data) < 250_000, len(data)
from ingest.errors import ParseError
from ingest.memsnap import build_views, load_snapshot
try:
    build_views(load_snapshot(data, source="hostile.pickle"))
    print("ACCEPTED")
except ParseError as e:
    print("REFUSED", e)
"""
REFUSALS = {
    "frame name: a list holding itself twice, 26 deep": "found list, not a string",
    "frame name: one 139 KB string shared by every frame": "139000 characters, over the 4096",
    "frame name: a 4000-character string shared 6.4M times": "expands past 67108864 bytes",
    "memo reuse: one block list in 5000 segments": "expands past 67108864 bytes",
    "memo reuse: one entry list as 5000 devices' history": "expands past 67108864 bytes",
    "views: 700 blocks with distinct 16-frame stacks of long names": "views would be 4",
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_small_pickle_that_expands_is_refused_within_bounds(attack: str) -> None:
    cost = measure(textwrap.dedent(ATTACKS[attack]) + READ, timeout_s=120)
    assert cost.finished, cost.output
    assert "REFUSED" in cost.output and REFUSALS[attack] in cost.output, cost.output
    assert "hostile.pickle" in cost.output
    assert cost.within(peak_mb=400, cpu_s=15), (cost.peak_bytes, cost.cpu_s)

"""Every Kineto file of the shared corpus and of tests/data/public: per-kernel count and total
equal raw sums.

The reference is computed here from the file's own JSON with decimal arithmetic, the same
rule as ../shared/tools/conformance.py. The corpus's files are left out when ../shared/corpus
is absent; the public ones (tests/data/public/MANIFEST) are committed.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from ingest import TraceStats, parse_file

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
KINETO_FILES = sorted(
    [*(CORPUS / "kineto").glob("*.json*"), *(CORPUS / "h200").glob("torch*.json")]
) + sorted(PUBLIC.glob("*.json*"))


def _raw_kernel_sums(path: Path) -> dict[str, tuple[int, int]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        doc = json.load(f, parse_float=str)
    totals: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "Kernel") and e.get("ph") == "X":
            whole, _, frac = str(e["dur"]).partition(".")
            totals[e["name"]] += int(whole) * 1000 + int((frac + "000")[:3])
            counts[e["name"]] += 1
    return {name: (counts[name], totals[name]) for name in totals}


@pytest.mark.parametrize("path", KINETO_FILES, ids=lambda p: p.name)
def test_kernel_stats_match_raw_sums(path: Path) -> None:
    stats = TraceStats()
    for event in parse_file(path).events:
        stats.add(event)
    got = {k.name: (k.count, k.total_ns) for k in stats.kernels()}
    expected = _raw_kernel_sums(path)
    assert got.keys() == expected.keys()
    for name, (count, total) in expected.items():
        assert got[name][0] == count, name
        # float64 µs -> ns may round each event by 1 ns in era-2 files; allow exactly that.
        assert abs(got[name][1] - total) <= count, name

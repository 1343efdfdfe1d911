"""The ingest aggregates of another tree (`--before`, e.g. main fed events one at a time)
against this tree's (fed per-kind `EventBlock`s, and events): the same answers, or not.

Run from the repository root:
    python perf/compare_aggregates.py --before /tmp/main-tree [--after TREE] [--sizes 1,1000]

For every trace file the columnar-aggregate test walks (tests/data, perf/data and, with
PERFDASH_TEST_CORPUS, the corpus), each side runs in its own process with PYTHONPATH at its
own tree and prints, as JSON, what `TraceAggregator` answers: event count, counts by kind,
span, `kernels()`, `kernel_groups()` and `summary(header)`. Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def child(path: Path, size: int) -> None:
    """One side: parse, feed (as blocks of `size` when > 0), dump the answers."""
    from ingest import IngestError, parse_file
    from ingest.aggregate import TraceAggregator

    try:
        with parse_file(path) as parsed:
            header, events = parsed.header, list(parsed.events)
    except IngestError as e:
        print(json.dumps({"error": str(e)}))
        return
    items: list[Any] = events
    if size:
        from ingest._columns import regroup

        items = regroup(events, size)
    agg = TraceAggregator()
    agg.drain(iter(items))
    st = agg.stats
    out = {
        "events": agg.events, "counts": dict(sorted(st.counts.items())),
        "span": [st.start_ns, st.end_ns, st.duration_ns],
        "kernels": [dataclasses.asdict(k) for k in st.kernels()],
        "summary": agg.summary(header),
        "groups": [dataclasses.asdict(g) for g in agg.kernel_groups()],
    }  # fmt: skip
    print(json.dumps(out, sort_keys=True))


def run(tree: Path, path: Path, size: int) -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(REPO / "perf" / "compare_aggregates.py"), "--child", str(path),
           str(size)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(done.stdout)


def files() -> list[Path]:
    sys.path.insert(0, str(REPO))
    from tests.ingest.test_columnar_aggregates import _files

    return _files()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, default=Path("/work/wt/before"))
    parser.add_argument("--after", type=Path, default=REPO, help="the tree to check")
    parser.add_argument("--sizes", default="1,1000,32768")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]))
        return 0
    bad = 0
    for path in files():
        before = run(args.before, path, 0)
        sides = {"events": run(args.after, path, 0)}
        sides |= {f"blocks of {s}": run(args.after, path, int(s)) for s in args.sizes.split(",")}
        diffs = [name for name, after in sides.items() if after != before]
        bad += bool(diffs)
        label = path.relative_to(path.parents[1])
        print(f"{label}: {'DIFFERS: ' + ', '.join(diffs) if diffs else 'same'}"
              f"{' (not read: both sides)' if 'error' in before else ''}", flush=True)  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

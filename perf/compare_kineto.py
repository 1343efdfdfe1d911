"""The Kineto parser against the one before issue #17's typed decode: same events, or not.

Run: `python perf/compare_kineto.py [--old REV] [--mutants N] [--time FILE] [FILES...]`.

The old parser is the whole `ingest` package at git revision `--old` (default: the commit
before the typed decode), unpacked into a temporary folder and run in its own process, so
nothing of today's code is shared with it. Both sides parse every file through
`ingest.parse_file` and dump, per file: the header, every event (a `repr` of all its fields,
args as ordered items, so key order and int/float are compared too) in a list per kind, the
report (skips, warnings, progress) and the error (type, message, offset, location) if any.
Any difference is printed; the exit status is 1 when there is one.

Per kind, in order: the parser now hands out each kind's events as `EventBlock` columns, so
the kinds interleave block by block, not event by event as in the file; within a kind the
file's order is kept, and that is what is compared (as lists, not multisets).

Files: the Kineto traces under tests/data and perf/data and, with PERFDASH_TEST_CORPUS set,
its kineto/ and h200/ folders (every file perfdash detects as torch_profiler), plus
`--mutants N` damaged copies of a small trace (truncated, bytes flipped, values retyped),
to compare the skip and error paths. A failing file may differ in where the stream stopped:
the error's message and byte offset must be equal, but its `location` (`traceEvents[i:]`,
the first element of the piece that holds the damage) and the events streamed before it
(per kind, a prefix of the other side's) follow the pieces, which are now cut by bytes, not by how
the decompressor chunked them. Those are counted apart and do not fail the run. So are
errors for text that is not UTF-8, whose offset now names the first bad byte (orjson
refuses such text before parsing, so the old offset was the start of the piece). And so
are files where the old parser crashed on an element whose `cat` is a list or an object
(`TypeError: unhashable type`): the new one treats it as an unknown category and goes on,
so the old events (per kind) and skips must be where the new ones start.

One intended change is undone on the old side unless `--as-is`: the old reader decided
whether a piece's `ts` needed quoting (floats at or above 2**43 µs) from every 16th element,
so a lone large float between samples lost its exactness; the new one checks every element.
The old tree is compared with its sample widened to every element (`items[::16]` ->
`items[::1]`), so the rest is compared exactly.

`--time FILE`: parse-only time (drain `parse_file(FILE).items`, the parser's own stream),
old and new alternating, each run in a fresh process; prints the median of `--repeat` runs,
the peak RSS and the load average. `--no-gc` times with the garbage collector off, as the
ingest worker runs (`backend.services.loading.pipeline`).

Files and damaged copies come from tests/ingest/kineto_files.py, shared with the tests.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OLD_REV = "16ff573"  # columnar, before the typed Kineto decode
PYTHON = sys.executable
sys.path.insert(0, str(REPO))
from tests.ingest.kineto_files import SMALL, kineto_files, mutant  # noqa: E402

_DUMP_CHILD = r"""
import pickle, sys
from pathlib import Path
from ingest import IngestError, parse_file

def event_repr(e):
    args = list(e.args.items()) if e.args is not None else None
    return repr((e.kind.value, e.name, e.start_ns, e.dur_ns, e.device, e.stream, e.pid,
                 e.tid, e.correlation, args, e.rank))

out = {}
for name in sys.argv[2:]:
    path = Path(name)
    events, header, report, error = {}, None, None, None
    try:
        parsed = parse_file(path)
        header = repr(parsed.header)
        report = parsed.report
        for e in parsed.events:
            events.setdefault(e.kind.value, []).append(event_repr(e))
    except IngestError as e:
        error = (type(e).__name__, str(e), getattr(e, "message", None),
                 getattr(e, "offset", None), getattr(e, "location", None))
    except Exception as e:  # a crash is compared too
        error = (type(e).__name__, str(e), None, None, None)
    rep = None if report is None else (report.skipped, report.warnings, report.bytes_total,
                                       report.bytes_done)
    out[name] = {"header": header, "events": events, "report": rep, "error": error}
with open(sys.argv[1], "wb") as f:
    pickle.dump(out, f)
"""

_TIME_CHILD = r"""
import gc, json, resource, sys, time
from pathlib import Path
from ingest import parse_file
if sys.argv[2] == "no-gc":
    gc.disable()
path = Path(sys.argv[1])
t0, c0 = time.perf_counter(), time.process_time()
items = n = 0
for item in parse_file(path).items:
    items += 1
    n += len(item) if hasattr(item, "events") else 1
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "events": n, "items": items,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def old_tree(rev: str, into: Path, as_is: bool) -> Path:
    """The `ingest` package at `rev`, unpacked under `into` (its ts sample widened unless
    `as_is`)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "ingest"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
        tf.extractall(into, filter="data")
    if not as_is:
        stream = into / "ingest" / "parsers" / "_json_stream.py"
        text = stream.read_text()
        assert text.count("items[::16]") == 1, "the old sampling rule is not where expected"
        stream.write_text(text.replace("items[::16]", "items[::1]"))
    return into


def mutants(into: Path, n: int, source: Path, seed: int = 17) -> list[Path]:
    """`n` damaged copies of a real trace (`kineto_files.mutant`), some gzipped and some of
    those cut: the skip and error paths' inputs."""
    rng = random.Random(seed)
    text = gzip.decompress(source.read_bytes())
    doc = json.loads(text)
    out = []
    for i in range(n):
        data = mutant(rng, text, doc)
        path = into / f"mutant{i:04d}.json"
        if i % 8 == 4:  # some gzipped, the gzip stream cut too
            path = path.with_suffix(".json.gz")
            data = gzip.compress(data)
            data = data[: rng.randrange(len(data))] if i % 16 == 4 else data
        path.write_bytes(data)
        out.append(path)
    return out


def dump(pythonpath: Path, files: list[Path], out: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    subprocess.run(
        [PYTHON, "-c", _DUMP_CHILD, str(out), *map(str, files)],
        check=True,
        env=env,
        cwd=pythonpath,
    )
    with out.open("rb") as f:
        result: dict[str, Any] = pickle.load(f)
    return result


def _prefix(a: list[Any], b: list[Any]) -> bool:
    """One list starts the other."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _kind_prefix(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> bool:
    """For every kind, one side's events start the other's."""
    return all(_prefix(a.get(kind, []), b.get(kind, [])) for kind in a.keys() | b.keys())


def _starts(longer: dict[str, list[Any]], shorter: dict[str, list[Any]]) -> bool:
    """For every kind, `shorter`'s events are where `longer`'s start."""
    return all(longer.get(k, [])[: len(v)] == v for k, v in shorter.items())


def first_non_utf8(path: Path) -> int | None:
    """The decompressed offset of the file's first byte that is not UTF-8, if any."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.GzipFile(fileobj=io.BytesIO(data)).read()  # tolerated: damaged gzip fails
    try:
        data.decode()
    except UnicodeDecodeError as e:
        return e.start
    return None


def stopped_elsewhere(name: str, a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """Both failed with the same message at the same byte (or the new one at the first byte
    that is not UTF-8), having streamed the same events up to where the shorter stopped:
    which of the two, or None."""
    ea, eb = a["error"], b["error"]
    if ea is None or eb is None:
        return None
    empty: tuple[Any, ...] = (0, [], 0, 0)
    ra, rb = a["report"] or empty, b["report"] or empty
    why = "stopped at another piece" if ea[3] == eb[3] else None
    if why is None and ea[3] is not None:
        try:
            if eb[3] == first_non_utf8(Path(name)) and ea[3] <= eb[3]:
                why = "offset names the first byte that is not UTF-8"
        except (OSError, EOFError, ValueError):
            pass
    same = (
        why is not None
        and ea[:1] + ea[2:3] == eb[:1] + eb[2:3]
        and (a["header"] == b["header"] or None in (a["header"], b["header"]))
        and _kind_prefix(a["events"], b["events"])
        and _prefix(ra[1], rb[1])
    )
    return why if same else None


def old_crash_fixed(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The old parser crashed on an unhashable `cat`; the new one read on from there."""
    ea, ra, rb = a["error"], a["report"], b["report"]
    return (
        ea is not None
        and ea[0] == "TypeError"
        and ea[1].startswith("unhashable type")
        and a["header"] == b["header"]
        and _starts(b["events"], a["events"])
        and (ra is None or rb[1][: len(ra[1])] == ra[1])
    )


def compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[int, Counter[str]]:
    """(files that differ, files that differ as intended by why); prints each that differs."""
    differ = 0
    intended: Counter[str] = Counter()
    for name in old:
        a, b = old[name], new[name]
        if a == b:
            continue
        why = stopped_elsewhere(name, a, b)
        if why is None and old_crash_fixed(a, b):
            why = "old crashed on a non-string cat"
        if why is not None:
            intended[why] += 1
            continue
        differ += 1
        print(f"DIFFERS: {name}")
        for key in ("header", "report", "error"):
            if a[key] != b[key]:
                print(f"  {key}: old {str(a[key])[:300]}\n  {key}: new {str(b[key])[:300]}")
        for kind in sorted(a["events"].keys() | b["events"].keys()):
            old_events, new_events = a["events"].get(kind, []), b["events"].get(kind, [])
            if old_events == new_events:
                continue
            n = min(len(old_events), len(new_events))
            first = next((i for i in range(n) if old_events[i] != new_events[i]), n)
            print(f"  {kind}: {len(old_events)} old, {len(new_events)} new; first diff #{first}")
            for side, ev in (("old", old_events), ("new", new_events)):
                print(f"    {side}: {ev[first][:300] if first < len(ev) else None}")
    return differ, intended


def timing(path: Path, old: Path, repeat: int, gc: bool = True, new: Path = REPO) -> None:
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    load_before = os.getloadavg()
    for _ in range(repeat):
        for side, root in (("old", old), ("new", new)):
            env = {**os.environ, "PYTHONPATH": str(root)}
            out = subprocess.run(
                [PYTHON, "-c", _TIME_CHILD, str(path), "gc" if gc else "no-gc"],
                check=True,
                env=env,
                cwd=root,
                capture_output=True,
                text=True,
            ).stdout
            runs[side].append(json.loads(out.strip().splitlines()[-1]))
    load_after = os.getloadavg()
    median = {
        side: {key: statistics.median(r[key] for r in results) for key in ("seconds", "cpu")}
        for side, results in runs.items()
    }
    print(f"{path.name} (garbage collector {'on' if gc else 'off'})")
    for side, results in runs.items():
        walls = ", ".join(f"{r['seconds']:.3f}" for r in results)
        rss = max(r["rss_mb"] for r in results)
        print(
            f"{side}: median {median[side]['seconds']:.3f} s wall, "
            f"{median[side]['cpu']:.3f} s CPU, peak RSS {rss:.0f} MB, "
            f"{results[0]['events']} events in {results[0]['items']} items (wall {walls})"
        )
    for what, key in (("wall", "seconds"), ("CPU", "cpu")):
        print(f"speedup ({what}): {median['old'][key] / median['new'][key]:.2f}x")
    print(f"load average before {load_before}, after {load_after} ({os.cpu_count()} CPUs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--old", default=OLD_REV, help="git revision of the old parser")
    parser.add_argument("--mutants", type=int, default=0)
    parser.add_argument("--mutant-source", type=Path, default=SMALL)
    parser.add_argument("--time", type=Path, help="time parse-only on this file instead")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-gc", action="store_true", help="time with the collector off")
    parser.add_argument("--as-is", action="store_true", help="keep the old ts sampling rule")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old = old_tree(args.old, tmp / "old", args.as_is or bool(args.time))
        if args.time:
            timing(args.time.resolve(), old, args.repeat, gc=not args.no_gc)
            return 0
        files = [f.resolve() for f in args.files] or kineto_files()
        (tmp / "mutants").mkdir()
        files += mutants(tmp / "mutants", args.mutants, args.mutant_source)
        t0 = time.perf_counter()
        before = dump(old, files, tmp / "old.pickle")
        after = dump(REPO, files, tmp / "new.pickle")
        differ, intended = compare(before, after)
        events = sum(len(e) for v in after.values() for e in v["events"].values())
        errors = sum(v["error"] is not None for v in after.values())
        print(
            f"{len(files)} files ({args.mutants} mutants), {events} events, {errors} errors: "
            f"{differ} differ ({time.perf_counter() - t0:.0f} s)"
        )
        for why, n in intended.most_common():
            print(f"  differ as intended: {n} {why}")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

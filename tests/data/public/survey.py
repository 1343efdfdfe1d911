"""Ingest every file of a folder of public traces and sort each into exact / read / refused /
wrong, for the count in docs/FORMATS.md ("Public traces").

Usage: PYTHONPATH=. python tests/data/public/survey.py FOLDER

References, computed here from the file, never by perfdash: a Kineto JSON's own kernel
events (decimal sums, one ns of float rounding allowed per launch, as
tests/ingest/test_corpus_conformance.py does); a rocprof-compute workload's
``pmc_kernel_top.csv`` (the tool's own summary, one ns per launch for rounding), else its
``pmc_perf.csv`` end minus start; a rocprof folder's ``results.stats.csv``. A file with none
of these that ingests counts as "read".
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
import zipfile
from collections import Counter
from pathlib import Path

from ingest import IngestError, TraceStats, parse_file
from ingest.detect import detect_trace_format
from ingest.events import TraceFormat

Ref = dict[str, tuple[int, float]]


def _kineto_ref(path: Path) -> Ref | None:
    try:
        if detect_trace_format(path) is not TraceFormat.KINETO:
            return None
    except IngestError:
        return None
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    try:
        with opener(path, "rb") as f:
            doc = json.load(f, parse_float=str)
    except (ValueError, OSError):
        return None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list) or "rocprofiler-sdk-tool" in doc:
        return None
    total: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for e in events:
        if isinstance(e, dict) and e.get("cat") in ("kernel", "Kernel") and e.get("ph") == "X":
            whole, _, frac = str(e["dur"]).partition(".")
            total[e["name"]] += int(whole) * 1000 + int((frac + "000")[:3])
            count[e["name"]] += 1
    return {n: (count[n], total[n]) for n in total}


def _table_ref(path: Path) -> Ref | None:
    with zipfile.ZipFile(path) as z:
        names = {Path(n).name: n for n in z.namelist()}
        for table, name, calls, ns in (
            ("pmc_kernel_top.csv", "Kernel_Name", "Count", "Sum(ns)"),
            ("results.stats.csv", "Name", "Calls", "TotalDurationNs"),
        ):
            if table in names:
                rows = csv.DictReader(io.StringIO(z.read(names[table]).decode()))
                return {r[name]: (int(r[calls]), float(r[ns])) for r in rows}
        if "pmc_perf.csv" in names:  # a workload without its summary: the dispatches' own times
            ref: dict[str, list[float]] = {}
            for r in csv.DictReader(io.StringIO(z.read(names["pmc_perf.csv"]).decode())):
                agg = ref.setdefault(r["Kernel_Name"], [0, 0.0])
                agg[0] += 1
                agg[1] += float(r["End_Timestamp"]) - float(r["Start_Timestamp"])
            return {n: (int(c), t) for n, (c, t) in ref.items()}
    return None


def survey(path: Path) -> tuple[str, str]:
    """`(outcome, detail)` for one file."""
    ref = _table_ref(path) if zipfile.is_zipfile(path) else _kineto_ref(path)
    stats = TraceStats()
    try:
        with parse_file(path) as trace:
            for event in trace.events:
                stats.add(event)
            notes = f"skipped {trace.report.skipped}" if trace.report.skipped else ""
    except IngestError as e:
        return "refused", str(e)[:160]
    got = {k.name: (k.count, k.total_ns) for k in stats.kernels()}
    if ref is None:
        return "read", f"{sum(c for c, _ in got.values())} kernels {notes}"
    for name, (count, total) in ref.items():
        have = got.get(name, (0, 0))
        if have[0] != count or abs(have[1] - total) > count:
            return "wrong", f"{name[:50]!r}: file {count}x {total} ns, perfdash {have}"
    if set(got) - set(ref):
        return "wrong", f"kernels the file does not have: {sorted(set(got) - set(ref))[:3]}"
    return "exact", f"{len(ref)} kernel names {notes}"


def main(folder: Path) -> None:
    """Print one line per file and the totals."""
    totals: Counter[str] = Counter()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        outcome, detail = survey(path)
        totals[outcome] += 1
        print(f"{outcome:8} {path.name}: {detail}")
    print(dict(totals))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

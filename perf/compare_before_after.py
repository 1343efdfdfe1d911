"""Every analysis before issue #17 (events as rows of the SQL `events` table) against after
(events in a Parquet dataset per trace, read by DuckDB): the same answers, or not.

Run from the repository root:
    python perf/compare_before_after.py [--before /work/wt/before] [--only TEXT] [--out FILE]

For every trace file of tests/data (and perf/data) and of the shared corpus (the files
`../shared/tools/conformance.py` walks; PERFDASH_TEST_CORPUS, skipped when absent), each
side runs in its own process, with PYTHONPATH at its own tree (`--before`: a checkout of
the code before the change; this repository: after), a fresh SQLite database and data dir:
it uploads the file through the API (several files of one job as one upload, as the tests
do), runs the ingest service in-process (`ingest_trace`; the broker is stubbed), then asks
the API (`TestClient(create_app())`) for every analysis and writes the answers as JSON.

What is compared, per file: the trace row, `/kernels` (default, every kernel by p95, each
grouping), `/summary`, `/timeline` (the whole trace and three zoomed windows at fixed
fractions of it, 5,000 items), `/timeline/overview`, `/timeline/search` for the top three
kernel names, `/timeline/gaps` (default and every gap of 10 µs or more), `/timeline/steps`,
`/events/{id}` for a few events of each window (picked by kind, name, start and lane;
looked up by the id each side returned) and for the top gaps' next kernels,
`/roofline`, `/memory`, `/findings`, `/export.json` (its kernel sums, every event
but the flows as a multiset, the header and track names, the flows apart) and the stored
events themselves in id order (the SQL rows before, `events.parquet` after). Two pairs of
traces are also run through `/compare`.

Normalised: the trace id (random) wherever it appears, the trace row's `id`, `created_at`,
`updated_at` and `dataset`; event ids are replaced by the event they name (kind, name,
start, duration, rank, device, stream, pid, tid, correlation, read from each side's own
store), so an id that points at another event still differs. Lists keep their order,
except the export's events: Chrome trace JSON has no meaningful event order (Perfetto and
perfdash's parser sort by time), and the new export writes them in its files' (kind, time)
order, the old one in id order. Numbers are compared exactly.

Explained differences (`RULES`: intended ones, float rounding) are still diffed and
printed; each rule checks that the differences are that one and no other. Exit status 1
when anything is left unexplained.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
PYTHON = sys.executable
TRACES = "/api/v1/traces"
RESULT = REPO / "perf" / "results" / "compare_before_after.txt"
MAX_ITEMS = 5000
# Zoomed windows, as fractions (numerator, denominator) of the trace's span: a wide one, a
# narrow one and a very narrow one, so both block and event modes are seen.
ZOOMS = (((25, 100), (35, 100)), ((50, 100), (52, 100)), ((800, 1000), (8005, 10000)))
GROUPS = ("stream", "device", "rank", "cpu_op")
SEARCHES = 3
DETAILS_PER_WINDOW = 4


@dataclass(frozen=True)
class Case:
    """One comparison: uploads (each a list of files sent as one upload)."""

    label: str
    uploads: tuple[tuple[Path, ...], ...]
    pair: bool = False  # only /compare of the first upload against the second


def _one(path: Path, label: str | None = None) -> Case:
    return Case(label or str(path.relative_to(path.parents[1])), ((path,),))


def fixture_cases() -> list[Case]:
    """The repository's trace files, as the tests upload them."""
    torch, nsys, ncu, roc = DATA / "torch", DATA / "nsys", DATA / "ncu", DATA / "rocprof"
    ddp = tuple(sorted((DATA / "ddp").glob("ddp_rank*.pt.trace.json.gz")))
    cases = [_one(p) for p in sorted(torch.glob("*.pt.trace.json.gz"))]
    cases.append(Case("ddp/rank0+rank1 (one upload)", (ddp,)))
    cases.append(_one(ddp[0]))
    cases += [_one(p) for p in sorted(nsys.glob("*.sqlite"))]
    cases += [_one(p) for p in sorted(ncu.glob("*.csv"))]
    rocprof = [
        roc / "4242_results.db", roc / "4242_results.json", roc / "compute_workload.zip",
        roc / "v1" / "results.csv", roc / "v1" / "results.json", roc / "v1_old_results.csv",
        roc / "v3_old_kernel_trace.csv", roc / "v3_run.zip", roc / "v3_run.tar.gz",
        *sorted((roc / "v2").glob("*.csv")),
        *sorted((roc / "bad").iterdir()),
    ]  # fmt: skip
    cases += [Case(str(p.relative_to(DATA)), ((p,),)) for p in rocprof]
    for folder in (roc / "v1", roc / "v2", roc / "v3_csv" / "host1" / "4242"):
        files = tuple(sorted(folder.glob("*.csv")))
        cases.append(Case(f"{folder.relative_to(DATA)}/*.csv (one upload)", (files,)))
    big = REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz"
    cases.append(Case("perf/data/" + big.name, ((big,),)))
    cases.append(
        Case(
            "compare: torch train_step vs gpt_small",
            ((torch / "h200_train_step.pt.trace.json.gz",),
             (torch / "h200_gpt_small.pt.trace.json.gz",)),
            pair=True,
        )
    )  # fmt: skip
    cases.append(
        Case(
            "compare: nsys train_step vs torch train_step",
            ((nsys / "train_step.sqlite",), (torch / "h200_train_step.pt.trace.json.gz",)),
            pair=True,
        )
    )
    return cases


def corpus_cases(corpus: Path) -> list[Case]:
    """Every corpus file `../shared/tools/conformance.py` walks, in its order."""
    files = sorted((corpus / "kineto").iterdir())
    h200 = corpus / "h200"
    files += [h200 / "torch2.11_gemm_loop.json", h200 / "nsys2025.3_small.sqlite",
              h200 / "ncu2025.3_roofline_raw.csv"]  # fmt: skip
    files.append(corpus / "rocprof_v1" / "llamacpp_r9700__results.csv")
    for sub in ("rocprof_v1", "rocprofv3"):
        for f in sorted((corpus / sub).iterdir()):
            if (
                f.suffix in (".csv", ".json")
                and "stats" not in f.name
                and f.name != "llamacpp_r9700__results.csv"
            ):
                files.append(f)
    return [Case("corpus/" + str(f.relative_to(corpus)), ((f,),)) for f in files]


# ---- the child: one side, one case -------------------------------------------------------


def child(out: Path, spec: dict[str, Any]) -> None:
    """Ingest the case's uploads with the tree on PYTHONPATH and dump every answer."""
    import backend
    import backend.core.queue as queue

    queue.enqueue = lambda *a, **k: None  # no broker: the ingest is run right here
    from fastapi.testclient import TestClient

    from backend.core.config import get_settings
    from backend.core.db import get_engine
    from backend.core.migrate import upgrade_database
    from backend.main import create_app
    from backend.services.loading.pipeline import ingest_trace

    upgrade_database()
    settings, engine = get_settings(), get_engine()
    result: dict[str, Any] = {"tree": str(Path(backend.__file__).parents[1]), "uploads": []}
    with TestClient(create_app()) as client:
        ids = []
        for files in spec["uploads"]:
            paths = [Path(f) for f in files]
            sent = [("file", (p.name, p.read_bytes())) for p in paths]
            accepted = client.post(TRACES, files=sent)
            assert accepted.status_code == 202, accepted.text
            trace_id = accepted.json()["id"]
            t0 = time.perf_counter()
            status = ingest_trace(engine=engine, settings=settings, trace_id=trace_id)
            seconds = time.perf_counter() - t0
            ids.append(trace_id)
            if spec["pair"]:
                continue
            answers = _answers(client, trace_id)
            store = _store(engine, settings, trace_id)
            _name_events(answers, store)
            answers["store"] = {"status": 200, "body": [row[1:] for row in store]}
            result["uploads"].append(
                {"trace_id": trace_id, "status": str(status), "seconds": seconds,
                 "answers": answers}
            )  # fmt: skip
        if spec["pair"]:
            a, b = ids[0], ids[1]
            answers = {
                "compare": _get(client, "/api/v1/compare", {"a": a, "b": b}),
                "compare_markdown": _get(
                    client, "/api/v1/compare", {"a": a, "b": b, "format": "markdown"}
                ),
            }
            result["uploads"].append({"trace_id": a, "other_id": b, "answers": answers})
    out.write_text(json.dumps(result))


def _get(client: Any, url: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    r = client.get(url, params=params)
    try:
        body = r.json()
    except ValueError:
        body = r.text
    return {"status": r.status_code, "body": body}


def _answers(client: Any, trace_id: str) -> dict[str, dict[str, Any]]:
    """Every analysis of one trace, keyed by a name for the report."""
    t = f"{TRACES}/{trace_id}"
    a: dict[str, dict[str, Any]] = {"trace": _get(client, t)}
    a["kernels"] = _get(client, f"{t}/kernels")
    a["kernels?sort=p95"] = _get(client, f"{t}/kernels", {"sort": "p95", "limit": 100_000})
    for group in GROUPS:
        a[f"kernels?group={group}"] = _get(
            client, f"{t}/kernels", {"group": group, "limit": 100_000}
        )
    a["summary"] = _get(client, f"{t}/summary")
    full = _get(client, f"{t}/timeline", {"max_items": MAX_ITEMS})
    a["timeline"] = full
    windows = [full]
    if full["status"] == 200:
        lo, hi = full["body"]["trace_start_ns"], full["body"]["trace_end_ns"]
        for (n0, d0), (n1, d1) in ZOOMS:
            start, end = lo + (hi - lo) * n0 // d0, lo + (hi - lo) * n1 // d1
            params = {"start_ns": start, "end_ns": end, "max_items": MAX_ITEMS}
            key = f"timeline[{n0 / d0:g}..{n1 / d1:g}]"
            a[key] = _get(client, f"{t}/timeline", params)
            windows.append(a[key])
        lanes = [lane["lane"] for lane in full["body"]["lanes"]][:2]
        if lanes:  # the second zoom, two lanes only
            (n0, d0), (n1, d1) = ZOOMS[1]
            start, end = lo + (hi - lo) * n0 // d0, lo + (hi - lo) * n1 // d1
            params = {"start_ns": start, "end_ns": end, "max_items": MAX_ITEMS,
                      "lanes": ",".join(map(str, lanes))}  # fmt: skip
            a[f"timeline[{n0 / d0:g}..{n1 / d1:g}, lanes {lanes}]"] = _get(
                client, f"{t}/timeline", params
            )
            windows.append(a[f"timeline[{n0 / d0:g}..{n1 / d1:g}, lanes {lanes}]"])
    a["timeline/overview"] = _get(client, f"{t}/timeline/overview")
    kernels = a["kernels"]["body"].get("items", []) if a["kernels"]["status"] == 200 else []
    for i, kernel in enumerate(kernels[:SEARCHES]):
        q = kernel["name"][:200]
        a[f"timeline/search[kernel #{i + 1}]"] = _get(client, f"{t}/timeline/search", {"q": q})
        if i == 0 and full["status"] == 200:  # and within the first zoom
            (n0, d0), (n1, d1) = ZOOMS[0]
            lo, hi = full["body"]["trace_start_ns"], full["body"]["trace_end_ns"]
            params = {"q": q, "start_ns": lo + (hi - lo) * n0 // d0,
                      "end_ns": lo + (hi - lo) * n1 // d1}  # fmt: skip
            a["timeline/search[kernel #1, first zoom]"] = _get(
                client, f"{t}/timeline/search", params
            )
    a["timeline/gaps"] = _get(client, f"{t}/timeline/gaps")
    a["timeline/gaps?min_ns=10000"] = _get(
        client, f"{t}/timeline/gaps", {"min_ns": 10_000, "limit": 10_000}
    )
    a["timeline/steps"] = _get(client, f"{t}/timeline/steps")
    for key, event_id in _picked_events(windows, a["timeline/gaps"]):
        a[f"events/{{{key}}}"] = _get(client, f"{t}/events/{event_id}")
    a["roofline"] = _get(client, f"/api/v1/traces/{trace_id}/roofline")
    a["memory"] = _get(client, f"/api/v1/traces/{trace_id}/memory")
    a["findings"] = _get(client, f"/api/v1/traces/{trace_id}/findings")
    a.update(_export(client, t))
    a.update(_step_markers(client, t, a["timeline/steps"]))  # last: it changes the summary
    return a


def _step_markers(client: Any, t: str, steps: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each step marker the trace offers (three at most): the steps it gives when
    tried, then kept (`PUT step-marker`, which re-derives the summary's steps from the
    stored events) with the summary after; then back to automatic."""
    a: dict[str, dict[str, Any]] = {}
    if steps["status"] != 200:
        return a
    for option in steps["body"].get("options", [])[:3]:
        marker = option["marker"]
        a[f"timeline/steps?step_marker={marker}"] = _get(
            client, f"{t}/timeline/steps", {"step_marker": marker}
        )
        put = client.put(f"{t}/step-marker", json={"marker": marker})
        a[f"timeline/steps[PUT step-marker {marker}]"] = {"status": put.status_code,
                                                         "body": put.json()}  # fmt: skip
        a[f"summary[after PUT step-marker {marker}]"] = _get(client, f"{t}/summary")
    if a:
        put = client.put(f"{t}/step-marker", json={"marker": None})
        a["timeline/steps[PUT step-marker null]"] = {"status": put.status_code, "body": put.json()}
        a["summary[after PUT step-marker null]"] = _get(client, f"{t}/summary")
    return a


def _picked_events(
    windows: list[dict[str, Any]], gaps: dict[str, Any]
) -> Iterator[tuple[str, int]]:
    """A few events of each window (spread over it in time order), named by kind, name,
    start and lane; and the GPU events after the three longest gaps."""
    seen = set()
    for window in windows:
        if window["status"] != 200:
            continue
        items = [i for i in window["body"]["items"] if i.get("id") is not None]
        items.sort(key=lambda i: (i["start_ns"], i["lane"], i["category"], i["name"]))
        n = len(items)
        picks = (
            items
            if n <= DETAILS_PER_WINDOW
            else [items[k * (n - 1) // (DETAILS_PER_WINDOW - 1)] for k in range(DETAILS_PER_WINDOW)]
        )
        for item in picks:
            key = (
                f"{item['category']} {item['name'][:60]!r} @{item['start_ns']} lane {item['lane']}"
            )
            if key not in seen:
                seen.add(key)
                yield key, item["id"]
    if gaps["status"] == 200:
        for i, gap in enumerate(gaps["body"]["items"][:3]):
            if gap.get("next_event_id") is not None:
                yield (
                    f"after gap #{i + 1} (lane {gap['lane']} @{gap['start_ns']})",
                    gap["next_event_id"],
                )


def _export(client: Any, t: str) -> dict[str, dict[str, Any]]:
    """`/export.json` reduced to what must not change: the kernel sums (count and total ns
    per name, from events with cat kernel), every event but the flows as a multiset (times
    as integer ns), the header and the track names; the flows apart."""
    r = client.get(f"{t}/export.json")
    if r.status_code != 200:
        failed = {"status": r.status_code, "body": r.text}
        return {k: failed for k in ("export_kernel_sums", "export_events", "export_flows")}
    doc = json.loads(r.content, object_pairs_hook=_pairs, parse_float=_float_text)
    events = doc.pop("traceEvents")
    sums: dict[str, list[int]] = {}
    rest: Counter[str] = Counter()
    flows: Counter[str] = Counter()
    for e in events:
        if e.get("ph") in ("s", "f"):
            flows[json.dumps(_ns(e), sort_keys=True)] += 1
            continue
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            count_total = sums.setdefault(e["name"], [0, 0])
            count_total[0] += 1
            count_total[1] += _to_ns(e["dur"])
        rest[json.dumps(_ns(e), sort_keys=True)] += 1
    return {
        "export_header": {"status": 200, "body": doc},
        "export_kernel_sums": {"status": 200, "body": dict(sorted(sums.items()))},
        "export_events": {"status": 200, "body": dict(sorted(rest.items()))},
        "export_flows": {"status": 200, "body": dict(sorted(flows.items()))},
    }


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key written twice is kept as `key (again)`, so it shows in a diff."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        while key in out:
            key += " (again)"
        out[key] = value
    return out


FLOAT = "float:"


def _float_text(text: str) -> str:
    """A JSON float kept as its text, so the numbers' exact form is compared (and a time
    with 3 decimals of µs is never rounded through a float)."""
    return FLOAT + text


def _to_ns(us: Any) -> int:
    """A Chrome trace time (µs: an integer or a float's text) as integer ns, exactly."""
    text = us[len(FLOAT) :] if isinstance(us, str) else str(us)
    return int((Decimal(text) * 1000).to_integral_value())


def _ns(event: dict[str, Any]) -> dict[str, Any]:
    """An event with `ts`/`dur` as integer ns (`ts_ns`, `dur_ns`): the old export wrote
    them as floats (`1.5`), the new one with three decimals (`1.500`)."""
    e = dict(event)
    for key in ("ts", "dur"):
        if key in e:
            e[key + "_ns"] = _to_ns(e.pop(key))
    return e


def _store(engine: Any, settings: Any, trace_id: str) -> list[list[Any]]:
    """The trace's stored events in id order, as [id, kind, name, start_ns, dur_ns, rank,
    device, stream, pid, tid, correlation, args text]: the `events` table before, the
    dataset's `events.parquet` after (read here with pyarrow, not perfdash's reader)."""
    from sqlalchemy import inspect, text

    cols = "id, kind, name, start_ns, dur_ns, rank, device, stream, pid, tid, correlation, args"
    if "events" in inspect(engine).get_table_names():
        with engine.connect() as conn:
            sql = text(f"SELECT {cols} FROM events WHERE trace_id = :t ORDER BY id")
            return [list(row) for row in conn.execute(sql, {"t": trace_id})]
    import pyarrow.parquet as pq

    with engine.connect() as conn:
        dataset = conn.execute(
            text("SELECT dataset FROM traces WHERE id = :t"), {"t": trace_id}
        ).scalar()
    if dataset is None:
        return []
    path = settings.blob_dir / "datasets" / trace_id / dataset / "events.parquet"
    table = pq.read_table(path, columns=cols.split(", ")).sort_by("id")
    return [list(row.values()) for row in table.to_pylist()]


EVENT_ID_KEYS = ("id", "next_event_id", "launch_event_id")


def _name_events(answers: dict[str, dict[str, Any]], store: list[list[Any]]) -> None:
    """Replace event ids in the timeline, search, gaps and event answers by the event each
    names (from this side's own store)."""
    names = {row[0]: "event<" + "|".join(map(str, row[1:11])) + ">" for row in store}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (names.get(v, f"event<missing id {v}>") if k in EVENT_ID_KEYS
                    and isinstance(v, int) else walk(v))
                for k, v in node.items()
            }  # fmt: skip
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    for key, answer in answers.items():
        if key.startswith(("timeline", "events/")):
            answer["body"] = walk(answer["body"])


# ---- the parent: run both sides, normalise, diff -------------------------------------------

VOLATILE = ("created_at", "updated_at", "dataset")


def run_side(tree: Path, case: Case, work: Path) -> dict[str, Any]:
    """One side of one case, in a fresh process, database and data dir."""
    work.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env |= {
        "PYTHONPATH": str(tree),
        "PERFDASH_DATA_DIR": str(work / "var"),
        "PERFDASH_DATABASE_URL": f"sqlite:///{work / 'perfdash.db'}",
        "PERFDASH_BROKER_URL": "",
        "PERFDASH_MAX_UPLOAD_BYTES": str(2 * 1024**3),
        "PERFDASH_MAX_DECOMPRESSED_BYTES": str(8 * 1024**3),
    }
    spec = {"uploads": [[str(p) for p in u] for u in case.uploads], "pair": case.pair}
    out = work / "answers.json"
    cmd = [PYTHON, str(Path(__file__).resolve()), "--child", str(out), json.dumps(spec)]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join(line for line in proc.stderr.splitlines() if "Warning" not in line)
        return {"crash": f"exit status {proc.returncode}: {tail[-600:]}"}
    result: dict[str, Any] = json.loads(out.read_text())
    if Path(result["tree"]).resolve() != tree.resolve():
        raise SystemExit(f"the child imported backend from {result['tree']}, not {tree}")
    return result


def normalise(side: dict[str, Any]) -> dict[str, Any]:
    """Endpoint -> answer, for all uploads of a side, volatile fields out; the gaps in one
    order (see `_gaps_in_one_order`)."""
    if "crash" in side:  # the side's process died: nothing else of it to compare
        return {"crash": side["crash"]}
    out: dict[str, Any] = {}
    for upload in side["uploads"]:
        ids = [upload["trace_id"], upload.get("other_id")]
        for key, answer in upload["answers"].items():
            answer = _scrub(answer, [i for i in ids if i])
            if key == "trace" and isinstance(answer["body"], dict):
                for field in ("id", *VOLATILE):
                    answer["body"].pop(field, None)
            if key.startswith("timeline/gaps"):
                _gaps_in_one_order(answer["body"])
            out[key] = answer
    return out


def _gaps_in_one_order(body: Any) -> None:
    """Gaps of equal length sorted by (lane, start). The API promises longest first; the
    old query said only `ORDER BY dur_ns DESC`, so equal gaps came in whatever order
    SQLite's index scan gave, while the new one orders them by (lane, start_ns). Whether
    each side is longest first is kept as a field, so a break of the promise still shows."""
    if not isinstance(body, dict) or not isinstance(body.get("items"), list):
        return
    items = body["items"]
    body["longest_first"] = all(a["dur_ns"] >= b["dur_ns"] for a, b in pairwise(items))
    items.sort(key=lambda g: (-g["dur_ns"], g["lane"], g["start_ns"]))


def _scrub(node: Any, ids: list[str]) -> Any:
    """The trace ids, wherever they appear, as `<trace>`/`<other>`; volatile fields out."""
    if isinstance(node, dict):
        return {_scrub(k, ids): _scrub(v, ids) for k, v in node.items() if k not in VOLATILE}
    if isinstance(node, list):
        return [_scrub(v, ids) for v in node]
    if isinstance(node, str):
        for trace_id, name in zip(ids, ("<trace>", "<other>"), strict=False):
            node = node.replace(trace_id, name)
    return node


MISSING = "<absent>"
Diff = tuple[str, Any, Any]  # (JSON path, before, after); MISSING where a side lacks it


def differences(a: Any, b: Any, path: str = "$") -> Iterator[Diff]:
    """Where `a` and `b` differ (exactly: 1 and 1.0 differ, and so do key orders)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                yield (f"{path}.{k}", a[k], MISSING)
        for k in b:
            if k not in a:
                yield (f"{path}.{k}", MISSING, b[k])
        for k in a:
            if k in b:
                yield from differences(a[k], b[k], f"{path}.{k}")
        if [k for k in a if k in b] != [k for k in b if k in a]:
            yield (f"{path}.<key order>", list(a), list(b))
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield (f"{path}.<length>", len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b or type(a) is not type(b):
        yield (path, a, b)


def _show(diff: Diff) -> str:
    path, a, b = diff
    note = ""
    if isinstance(a, int | float) and isinstance(b, int | float) and a != b and a and b:
        note = f" (relative {abs(a - b) / max(abs(a), abs(b)):.1e})"
    return f"{path}: before {_short(a)}, after {_short(b)}{note}"


def _short(value: Any, width: int = 160) -> str:
    text = value if value is MISSING else json.dumps(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# ---- explained differences ----------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A difference that is explained, and the check that it is that difference and no other:
    `holds(key, diffs, before, after)` with all answers of the case on each side."""

    tag: str  # I: the change intends it; F: floating-point rounding
    name: str
    why: str
    holds: Callable[[str, list[Diff], dict[str, Any], dict[str, Any]], bool]


def _flows_added(
    key: str, diffs: list[Diff], before: dict[str, Any], after: dict[str, Any]
) -> bool:
    """The old export had no flows; every flow of the new one is a Kineto ac2g s/f."""
    if key != "export_flows" or before[key]["body"] != {}:
        return False
    flows = [json.loads(line) for line in after[key]["body"]]
    return all(f["ph"] in ("s", "f") and f["cat"] == "ac2g" for f in flows)


def _launch_in_own_process(
    key: str, diffs: list[Diff], before: dict[str, Any], after: dict[str, Any]
) -> bool:
    """Only the launch (and the CPU op around it) differ, and the new launch is in the GPU
    event's own process while the old one was not."""
    if not key.startswith("events/"):
        return False
    if not all(path.startswith(("$.body.runtime", "$.body.cpu_op")) for path, _, _ in diffs):
        return False
    old, new = before[key]["body"], after[key]["body"]
    pid = new["event"]["pid"]
    return (
        pid is not None
        and new["runtime"] is not None
        and new["runtime"]["pid"] == pid
        and (old["runtime"] is None or old["runtime"]["pid"] != pid)
    )


def _ranks_apart(
    key: str, diffs: list[Diff], before: dict[str, Any], after: dict[str, Any]
) -> bool:
    """A trace of several ranks, where only the estimated points (and their share) differ."""
    if key != "roofline" or after[key]["body"].get("kind") != "estimated":
        return False
    ranks = after.get("kernels?group=rank", {}).get("body", {}).get("items", [])
    return len(ranks) > 1 and all(
        path.startswith(("$.body.points", "$.body.covered_time_share")) for path, _, _ in diffs
    )


def _ties_at_the_cut(
    key: str, diffs: list[Diff], before: dict[str, Any], after: dict[str, Any]
) -> bool:
    """A full page of gaps, longest first on both sides, the same count and the same gaps
    down to the shortest length on the page; only which gaps of that length made the cut
    differs."""
    if not key.startswith("timeline/gaps"):
        return False
    old, new = before[key]["body"], after[key]["body"]
    page = len(new["items"])
    if not (old["longest_first"] and new["longest_first"] and old["count"] == new["count"]):
        return False
    if page == 0 or len(old["items"]) != page or page == new["count"]:
        return False
    cut = new["items"][-1]["dur_ns"]
    longer = [g for g in new["items"] if g["dur_ns"] > cut]
    return (
        old["items"][-1]["dur_ns"] == cut
        and [g for g in old["items"] if g["dur_ns"] > cut] == longer
        and sum(1 for g in old["items"] if g["dur_ns"] == cut) == page - len(longer)
    )


def _last_digits(
    key: str, diffs: list[Diff], before: dict[str, Any], after: dict[str, Any]
) -> bool:
    """Every difference is a utilisation float that differs by at most a few units in the
    last place."""
    return key == "timeline/overview" and all(
        path.endswith(".utilization")
        and isinstance(a, float)
        and isinstance(b, float)
        and abs(a - b) <= 4 * math.ulp(max(abs(a), abs(b)))
        for path, a, b in diffs
    )


RULES = (
    Rule("I", "export flows",
         "the new export adds Kineto's ac2g flow events (ph s/f: each CPU launch to its GPU "
         "work), which the old one did not write (issue #17: 'a new Chrome export with flow "
         "events'); the events themselves are compared in export_events and "
         "export_kernel_sums", _flows_added),
    Rule("I", "launch in the GPU event's process",
         "commit cdd6f5b: an nsys GPU event's launch is the runtime call of its own process "
         "(correlation ids are per process). Before, the detail of a kernel of process B "
         "could show process A's call with the same correlation id; the new one shows B's",
         _launch_in_own_process),
    Rule("I", "roofline ops matched within their rank",
         "fixed here (3eb3195): ranks of a multi-rank trace share External ids; the old code "
         "summed both ranks' kernels into one launch and took whichever rank's op it read "
         "last (SQLite's index order), so its points were wrong and order-dependent. Checked "
         "against each rank file's own ops and kernels by tests/views/test_views_api.py::"
         "test_estimated_roofline_matches_ops_and_kernels_within_each_rank", _ranks_apart),
    Rule("I", "equal gaps at the page's end",
         "the old gaps query ordered by length only (`ORDER BY dur_ns DESC`), so which of "
         "several gaps of the same length filled the page's last places was whatever "
         "SQLite's index scan gave; the new one breaks ties by (lane, start_ns). Same count, "
         "same gaps down to that length; gaps of equal length are compared sorted by "
         "(lane, start) everywhere else", _ties_at_the_cut),
    Rule("F", "float summation order",
         "a bin's utilisation is a sum of floats: before, a plain sum in the order SQLite "
         "read the blocks (its primary key: level, length class, start, lane); after, "
         "math.fsum (exactly rounded, any order: a05bf2b, since DuckDB's order of a "
         "multi-row-group scan varies). The values differ by a few units in the last place",
         _last_digits),
)  # fmt: skip


def explain(
    key: str, diffs: list[Diff], before: dict[str, Any], after: dict[str, Any]
) -> Rule | None:
    """The rule that explains these differences, if one does."""
    if not diffs:
        return None
    return next((r for r in RULES if r.holds(key, diffs, before, after)), None)


@dataclass
class Outcome:
    diffs: list[Diff]
    rule: Rule | None

    @property
    def tag(self) -> str:
        return "=" if not self.diffs else self.rule.tag if self.rule else "D"


def compare_case(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Outcome]:
    """Endpoint -> its differences and the rule that explains them, if any."""
    result = {}
    for key in sorted(before.keys() | after.keys(), key=_order):
        if key not in before or key not in after:
            side = "before" if key in before else "after"
            shown = before[key] if key in before else after[key]
            where = "$" if key == "crash" else f"$ (asked of the {side} side only)"
            result[key] = Outcome([(where, shown if side == "before" else MISSING,
                                    shown if side == "after" else MISSING)], None)  # fmt: skip
            continue
        diffs = list(differences(before[key], after[key]))
        result[key] = Outcome(diffs, explain(key, diffs, before, after))
    return result


ORDER = ("crash", "trace", "kernels", "summary", "timeline", "timeline/overview",
         "timeline/search", "timeline/gaps", "timeline/steps", "events", "roofline", "memory",
         "findings", "export_header", "export_kernel_sums", "export_events", "export_flows",
         "store", "compare")  # fmt: skip


def _group(key: str) -> str:
    for group in sorted(ORDER, key=len, reverse=True):
        if key == group or key.startswith((group + "?", group + "[", group + "/", group + "_")):
            return group
    return key


def _order(key: str) -> tuple[int, str]:
    group = _group(key)
    return (ORDER.index(group) if group in ORDER else len(ORDER), key)


RANK = {"=": 0, "F": 1, "I": 2, "D": 3}


def report(results: list[tuple[Case, dict[str, Outcome]]], header: list[str]) -> str:
    """The summary table, the explained differences, then per case every endpoint."""
    lines = [*header, ""]
    columns = [g for g in ORDER if any(_group(k) == g for _, r in results for k in r)]
    width = max(len(c.label) for c, _ in results)
    lines += [
        "Summary (a column is a group of endpoints; a cell its worst):",
        "  = equal   I intended difference (a rule below checks it)   F floating-point "
        "rounding only (a rule below)   D unexplained difference   . not asked",
        "",
    ]
    for i, g in enumerate(columns):
        lines.append(f"  col {i + 1:2d}: {g}")
    lines.append("")
    lines.append(" " * width + " " + " ".join(f"{i + 1:>2d}" for i in range(len(columns))))
    cells: Counter[str] = Counter()
    single: Counter[str] = Counter()
    for case, result in results:
        row = []
        for g in columns:
            tags = [o.tag for k, o in result.items() if _group(k) == g]
            tag = max(tags, key=RANK.__getitem__) if tags else "."
            cells[tag] += 1
            row.append(f"{tag:>2}")
        single.update(o.tag for o in result.values())
        lines.append(f"{case.label:<{width}} " + " ".join(row))
    lines += [
        "",
        f"{len(results)} cases. Cells: {cells['=']} equal, {cells['I']} intended, "
        f"{cells['F']} rounding, {cells['D']} unexplained. Single endpoints: {single['=']} "
        f"equal, {single['I']} intended, {single['F']} rounding, {single['D']} unexplained.",
        "",
        "Explained differences (each is checked, not assumed: see RULES in the script):",
    ]
    for rule in RULES:
        hits = [(c.label, k) for c, r in results for k, o in r.items() if o.rule is rule]
        lines.append(f"  [{rule.tag}] {rule.name} ({len(hits)} endpoints): {rule.why}")
        for label, key in hits:
            lines.append(f"        {label}: {key}")
    lines += ["", "=" * 100, "Details (every endpoint of every case):", ""]
    for case, result in results:
        lines.append(f"== {case.label}")
        for key, o in result.items():
            what = {"=": "equal", "D": "DIFFERS"}.get(
                o.tag, f"differs: {o.rule.name if o.rule else ''}"
            )
            extra = f" ({len(o.diffs)} differences)" if o.diffs else ""
            lines.append(f"   {key:<60} {what}{extra}")
            if key == "crash":  # the dead side's stderr, whole
                text = next(v for v in o.diffs[0][1:] if v is not MISSING)
                lines += [f"       {line}" for line in str(text).splitlines()]
                continue
            for d in o.diffs[:6]:
                lines.append(f"       {_show(d)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _rev(tree: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(tree), "log", "-1", "--format=%h %s"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    return proc.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/work/wt/before"))
    parser.add_argument("--only", action="append", default=[], help="cases whose label has TEXT")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--keep", type=Path, help="keep each side's raw answers in this folder")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), json.loads(args.child[1]))
        return 0
    corpus = Path(os.environ.get("PERFDASH_TEST_CORPUS", REPO.parent / "shared" / "corpus"))
    cases = fixture_cases() + (corpus_cases(corpus) if corpus.is_dir() else [])
    if args.only:
        cases = [c for c in cases if any(t in c.label for t in args.only)]
    work = Path(tempfile.mkdtemp(prefix="compare-before-after-"))

    def one(item: tuple[int, Case]) -> tuple[Case, dict[str, Outcome]]:
        i, case = item
        sides = {}
        for side, tree in (("before", args.before), ("after", REPO)):
            raw = run_side(tree, case, work / f"{i:03d}" / side)
            if args.keep:
                dest = args.keep / f"{i:03d}-{side}.json"
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(json.dumps({"label": case.label, **raw}))
            sides[side] = normalise(raw)
        shutil.rmtree(work / f"{i:03d}", ignore_errors=True)
        result = compare_case(sides["before"], sides["after"])
        tags = Counter(o.tag for o in result.values())
        print(
            f"{case.label}: " + ", ".join(f"{n} {t}" for t, n in sorted(tags.items())), flush=True
        )
        return case, result

    t0 = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, enumerate(cases)))
    shutil.rmtree(work, ignore_errors=True)
    header = [
        "perf/compare_before_after.py: every analysis, before and after issue #17",
        f"before: {args.before} @ {_rev(args.before)}",
        f"after:  {REPO} @ {_rev(REPO)}",
        f"corpus: {corpus if corpus.is_dir() else 'absent, skipped'}",
        f"run: {time.strftime('%Y-%m-%d %H:%M')}, {time.monotonic() - t0:.0f} s, "
        f"{args.jobs} at once",
    ]
    text = report(results, header)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written {args.out}")
    return 1 if any(o.tag == "D" for _, r in results for o in r.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

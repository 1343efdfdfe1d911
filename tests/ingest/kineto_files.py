"""Kineto traces for the parser's checks: every torch_profiler file of the repository and the
corpus, and damaged copies of a real one.

One module for tests/ingest/test_kineto_typed.py and perf/compare_kineto.py, so both look
at the same files and the same kinds of damage. It imports no test fixtures (the perf
script loads it outside pytest).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from ingest import IngestError
from ingest.detect import detect_trace_format
from ingest.events import TraceFormat

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
# A git worktree sits elsewhere: PERFDASH_TEST_CORPUS points it at the corpus.
CORPUS = Path(os.environ.get("PERFDASH_TEST_CORPUS", REPO.parent / "shared" / "corpus"))
SMALL = DATA / "torch" / "h200_train_step.pt.trace.json.gz"  # the mutants' usual source

_VALUES: list[Any] = [
    None, True, "x", "1.5", "-3", -1, 1e300, [1], {"a": 1}, "", 2**63, "5151594869354.904",
    9876543210123.457, -0.0, "7 x", "stream 7", 2**70,
]  # fmt: skip
_FIELDS = ["ts", "dur", "name", "cat", "pid", "tid", "args"]
_ARG_KEYS = ["correlation", "device", "stream", "grid", "External id"]


def kineto_files() -> list[Path]:
    """Every file under tests/data, perf/data and the corpus's kineto/ and h200/ folders
    that perfdash detects as torch_profiler, in a stable order."""
    folders = [DATA, REPO / "perf" / "data", CORPUS / "kineto", CORPUS / "h200"]
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.json*")) if folder.exists() else []:
            try:
                if detect_trace_format(path, path.name) is TraceFormat.KINETO:
                    found.append(path)
            except IngestError:
                continue
    return found


def mutant(rng: random.Random, text: bytes, doc: dict[str, Any]) -> bytes:
    """A damaged copy of a trace (`text`, decoded as `doc`): cut anywhere, a few bytes
    replaced by JSON-ish characters, or well-formed JSON with odd values, keys or args."""
    kind = rng.randrange(3)
    if kind == 0:
        return text[: rng.randrange(len(text))]
    if kind == 1:
        buf = bytearray(text)
        for _ in range(rng.randrange(1, 4)):
            buf[rng.randrange(len(buf))] = rng.choice(b'{}[],:"0123456789.eE-+ \xff\\ntfa')
        return bytes(buf)
    events = [dict(e) for e in doc["traceEvents"]]
    for _ in range(rng.randrange(1, 20)):
        e = rng.choice(events)
        if rng.random() < 0.2:
            e.pop(rng.choice(_FIELDS), None)
        elif rng.random() < 0.3 and isinstance(e.get("args"), dict):
            e["args"] = {**e["args"], rng.choice(_ARG_KEYS): rng.choice(_VALUES)}
        else:
            e[rng.choice(_FIELDS)] = rng.choice(_VALUES)
    return json.dumps({**doc, "traceEvents": events}).encode()

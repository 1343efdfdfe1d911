"""The `torch-compile-times` metric format: torch.compile's own timing table, pushed as is.

``torch._dynamo.utils.compile_times(repr="csv", aggregate=...)`` returns two lists, the phase
names and their times in seconds; ``json.dumps`` of it is a document of this format:

- ``[[phase, ...], [seconds, ...]]``; with ``aggregate=True`` each time is one number (torch
  writes it as a string, "5.207991"); with ``aggregate=False`` it is every call's time joined
  by ", ", which becomes the point's samples.
- or ``{"compile_times": <that pair>, "counters": {name: number}}``: the counters
  (e.g. ``recompiles``, ``graph_breaks`` from ``torch._dynamo.utils.counters``) become
  count points.

Mapping: phase ``P`` -> metric ``compile.P_s``, unit ``s``; counter ``C`` -> metric
``compile.C``, unit ``count``; all lower is better. The run fields and the benchmark
(the model) come from the query (``?benchmark=resnet50&project=...&commit=...``).

Public surface: `compile_time_points`, `CompilePoint`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from backend.services.metrics.problems import MAX_SAMPLES, ProblemCollector

PREFIX = "compile."


class CompilePoint(NamedTuple):
    metric: str
    unit: str
    value: float | None
    samples: list[float] | None


def _seconds(raw: Any, path: str, errors: ProblemCollector) -> list[float] | None:
    """One time or the calls' times: numbers, or torch's strings ("0.1" or "0.1, 0.2")."""
    if isinstance(raw, list):
        values = errors.numbers(raw, path)
    elif isinstance(raw, str):
        values = _split(raw, path, errors)
    else:
        one = errors.number(raw, path)
        values = None if one is None else [one]
    if values is not None and any(v < 0 for v in values):
        errors.add(path, "a time cannot be negative")
        return None
    return values


def _split(text: str, path: str, errors: ProblemCollector) -> list[float] | None:
    parts = text.split(",")
    if len(parts) > MAX_SAMPLES:
        errors.add(path, f"{len(parts)} calls, the limit is {MAX_SAMPLES}")
        return None
    out = []
    for i, part in enumerate(parts):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            errors.add(path, f"part {i} ({part.strip()[:40]!r}) is not a finite number of seconds")
            return None
        out.append(value)
    return out


def _table(raw: Any, path: str, errors: ProblemCollector) -> list[CompilePoint]:
    if not (isinstance(raw, list) and len(raw) == 2 and all(isinstance(x, list) for x in raw)):
        errors.add(path, "expected compile_times(repr='csv'): [[phase, ...], [seconds, ...]]")
        return []
    names, times = raw
    if len(names) != len(times):
        errors.add(path, f"{len(names)} phase names but {len(times)} times")
        return []
    out = []
    for i, (name, value) in enumerate(zip(names, times, strict=True)):
        if not isinstance(name, str) or not name:
            errors.add(f"{path}[0][{i}]", "expected a phase name")
            continue
        seconds = _seconds(value, f"{path}[1][{i}]", errors)
        if seconds is None:
            continue
        one = len(seconds) == 1
        out.append(CompilePoint(f"{PREFIX}{name}_s", "s", seconds[0] if one else None,
                                None if one else seconds))  # fmt: skip
    return out


def _counters(raw: Any, errors: ProblemCollector) -> list[CompilePoint]:
    if not isinstance(raw, dict):
        errors.add("$.counters", "expected an object of counts")
        return []
    out = []
    for name, value in raw.items():
        number = errors.number(value, f"$.counters.{name}")
        if number is not None and errors.storable(name, "$.counters"):
            out.append(CompilePoint(f"{PREFIX}{name}", "count", number, None))
    return out


def compile_time_points(doc: Any, errors: ProblemCollector) -> list[CompilePoint]:
    """Points from a `compile_times(repr="csv")` table and optional counters.

    Args:
        doc: the decoded document (see the module docstring).
        errors: where every problem goes, with its JSON path.

    Returns:
        One point per phase, then one per counter; the benchmark is left to the query.
    """
    if not isinstance(doc, dict):
        return _table(doc, "$", errors)
    if "compile_times" not in doc:
        errors.add("$.compile_times", "is required")
        return []
    points = _table(doc["compile_times"], "$.compile_times", errors)
    return points + (_counters(doc["counters"], errors) if "counters" in doc else [])

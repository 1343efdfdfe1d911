"""Metric document formats: detect, validate and normalise to one `ParsedPush` (pure code).

Every problem is collected with its JSON path (``$.points[3].samples[1]``) so a CI job sees
all its mistakes at once, and nothing is stored when there is any.

Public surface: `parse_document`, `ParsedPush`, `ParsedPoint`, `Problem`,
`MetricDocumentError`, `FORMATS`, `MAX_POINTS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MAX_POINTS = 10_000
MAX_SAMPLES = 100_000
DIRECTIONS = ("lower_is_better", "higher_is_better")
RUN_FIELDS = ("project", "commit", "branch", "run_id", "url", "benchmark")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a document, and where (a JSON path)."""

    path: str
    message: str


class MetricDocumentError(ValueError):
    """The document cannot be stored; `problems` says what and where."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        shown = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{len(problems)} problem(s): {shown}{more}")


@dataclass(slots=True)
class ParsedPoint:
    benchmark: str
    metric: str
    unit: str = ""
    direction: str = "lower_is_better"
    value: float | None = None
    samples: list[float] | None = None
    hash: str | None = None
    stats: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class ParsedPush:
    format: str
    project: str = ""
    commit: str = ""
    branch: str = ""
    run_id: str = ""
    url: str = ""
    trace_id: str | None = None
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    environment: dict[str, Any] = field(default_factory=dict)
    points: list[ParsedPoint] = field(default_factory=list)


class _Errors:
    """Collects problems instead of stopping at the first (packaging's _ErrorCollector)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def number(self, raw: Any, path: str) -> float | None:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            self.add(path, f"expected a number, got {type(raw).__name__}")
            return None
        if not math.isfinite(raw):
            self.add(path, "expected a finite number")
            return None
        return float(raw)

    def text(self, obj: dict[str, Any], key: str, path: str, *, required: bool = False) -> str:
        raw = obj.get(key)
        if raw is None:
            if required:
                self.add(f"{path}.{key}", "is required")
            return ""
        if not isinstance(raw, str | int) or isinstance(raw, bool):
            self.add(f"{path}.{key}", f"expected a string, got {type(raw).__name__}")
            return ""
        return str(raw)

    def numbers(self, raw: Any, path: str) -> list[float] | None:
        if not isinstance(raw, list) or not raw:
            self.add(path, "expected a non-empty list of numbers")
            return None
        if len(raw) > MAX_SAMPLES:
            self.add(path, f"{len(raw)} samples, the limit is {MAX_SAMPLES}")
            return None
        out = [self.number(v, f"{path}[{i}]") for i, v in enumerate(raw)]
        return None if any(v is None for v in out) else [v for v in out if v is not None]


def _timestamp(raw: Any, path: str, errors: _Errors) -> datetime:
    if raw is None:
        return datetime.now(UTC)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return datetime.fromtimestamp(float(raw), UTC)
    if isinstance(raw, str):
        try:
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            errors.add(path, f"not an ISO 8601 timestamp: {raw[:40]!r}")
            return datetime.now(UTC)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    errors.add(path, "expected an ISO 8601 string or epoch seconds")
    return datetime.now(UTC)


def _native_point(raw: Any, path: str, benchmark: str, errors: _Errors) -> ParsedPoint | None:
    if not isinstance(raw, dict):
        errors.add(path, "expected an object")
        return None
    point = ParsedPoint(
        benchmark=errors.text(raw, "benchmark", path) or benchmark,
        metric=errors.text(raw, "metric", path, required=True),
        unit=errors.text(raw, "unit", path),
    )
    direction = raw.get("direction", "lower_is_better")
    if direction not in DIRECTIONS:
        errors.add(f"{path}.direction", f"must be one of {', '.join(DIRECTIONS)}")
    point.direction = str(direction)
    if "value" in raw:
        point.value = errors.number(raw["value"], f"{path}.value")
    if "samples" in raw:
        point.samples = errors.numbers(raw["samples"], f"{path}.samples")
    if "hash" in raw:
        point.hash = errors.text(raw, "hash", path) or None
    if not {"value", "samples", "hash"} & raw.keys():
        errors.add(path, "a point needs value, samples or hash")
    if not point.benchmark:
        errors.add(f"{path}.benchmark", "is required (on the point or the run)")
    return point


def _parse_native(doc: Any, push: ParsedPush, errors: _Errors) -> None:
    """The native run document: run fields, an environment, and a list of points."""
    if not isinstance(doc, dict):
        errors.add("$", "expected an object")
        return
    for key in ("project", "commit", "branch", "run_id", "url"):
        setattr(push, key, errors.text(doc, key, "$"))
    push.trace_id = errors.text(doc, "trace_id", "$") or None
    push.timestamp = _timestamp(doc.get("timestamp"), "$.timestamp", errors)
    env = doc.get("environment", {})
    if not isinstance(env, dict):
        errors.add("$.environment", "expected an object")
    else:
        push.environment = env
    benchmark = errors.text(doc, "benchmark", "$")
    points = doc.get("points")
    if not isinstance(points, list):
        errors.add("$.points", "expected a list of points")
        return
    for i, raw in enumerate(points):
        point = _native_point(raw, f"$.points[{i}]", benchmark, errors)
        if point is not None:
            push.points.append(point)
    if doc.get("determinism_hash") is not None:
        text = errors.text(doc, "determinism_hash", "$")
        push.points.append(ParsedPoint(benchmark, "determinism_hash", hash=text))


def _parse_pytest_benchmark(doc: Any, push: ParsedPush, errors: _Errors) -> None:
    """pytest-benchmark ``--benchmark-json``: seconds, summarised, raw rounds optional."""
    commit = doc.get("commit_info") or {}
    if isinstance(commit, dict):
        # Outside a git checkout pytest-benchmark writes placeholders; the query fills those.
        cid, branch = errors.text(commit, "id", "$.commit_info"), commit.get("branch")
        push.commit = "" if cid == "unversioned" else cid
        push.branch = branch if isinstance(branch, str) and branch != "(unknown)" else ""
    push.timestamp = _timestamp(doc.get("datetime"), "$.datetime", errors)
    machine = doc.get("machine_info")
    if isinstance(machine, dict):
        keep = ("node", "processor", "machine", "python_version", "system", "release")
        push.environment = {k: machine[k] for k in keep if k in machine}
    for i, bench in enumerate(doc.get("benchmarks") or []):
        path = f"$.benchmarks[{i}]"
        stats = bench.get("stats") if isinstance(bench, dict) else None
        if not isinstance(stats, dict):
            errors.add(f"{path}.stats", "expected an object")
            continue
        name = errors.text(bench, "fullname", path) or errors.text(bench, "name", path)
        point = ParsedPoint(benchmark=name, metric="time_ms", unit="ms")
        summary = {"min": "min", "max": "max", "mean": "mean", "median": "p50"}
        for src, dst in summary.items():
            value = errors.number(stats.get(src), f"{path}.stats.{src}")
            if value is not None:
                point.stats[dst] = value * 1e3
        if "data" in stats:
            data = errors.numbers(stats["data"], f"{path}.stats.data")
            point.samples = [v * 1e3 for v in data] if data else None
        point.value = point.stats.get("p50")
        push.points.append(point)


def _parse_google_benchmark(doc: Any, push: ParsedPush, errors: _Errors) -> None:
    """Google Benchmark JSON: repetitions become samples; aggregates only when alone."""
    context = doc.get("context")
    if isinstance(context, dict):
        push.environment = {k: v for k, v in context.items() if not isinstance(v, list | dict)}
        if "date" in context:
            push.timestamp = _timestamp(context["date"], "$.context.date", errors)
    by_key: dict[tuple[str, str], ParsedPoint] = {}
    aggregates: dict[tuple[str, str], float] = {}
    for i, bench in enumerate(doc.get("benchmarks") or []):
        path = f"$.benchmarks[{i}]"
        if not isinstance(bench, dict):
            errors.add(path, "expected an object")
            continue
        name = errors.text(bench, "run_name", path) or errors.text(
            bench, "name", path, required=True
        )
        unit = errors.text(bench, "time_unit", path) or "ns"
        metrics = {"real_time": (unit, "lower_is_better"), "cpu_time": (unit, "lower_is_better")}
        for counter in ("items_per_second", "bytes_per_second"):
            metrics[counter] = ("1/s" if counter[0] == "i" else "B/s", "higher_is_better")
        aggregate = bench.get("run_type") == "aggregate"
        for metric, (munit, direction) in metrics.items():
            if metric not in bench:
                continue
            value = errors.number(bench[metric], f"{path}.{metric}")
            if value is None:
                continue
            if aggregate:
                if bench.get("aggregate_name") == "mean":
                    aggregates[(name, metric)] = value
                continue
            point = by_key.setdefault(
                (name, metric), ParsedPoint(name, metric, munit, direction, samples=[])
            )
            assert point.samples is not None
            point.samples.append(value)
    for (name, metric), value in aggregates.items():
        if (name, metric) not in by_key:
            by_key[(name, metric)] = ParsedPoint(name, metric, value=value)
    push.points.extend(by_key.values())


def _action_parser(direction: str) -> Callable[[Any, ParsedPush, _Errors], None]:
    def parse(doc: Any, push: ParsedPush, errors: _Errors) -> None:
        """github-action-benchmark custom lists: name, unit, value; `benchmark` from the query."""
        if not isinstance(doc, list):
            errors.add("$", "expected a list of {name, unit, value}")
            return
        for i, raw in enumerate(doc):
            path = f"$[{i}]"
            if not isinstance(raw, dict):
                errors.add(path, "expected an object")
                continue
            point = ParsedPoint(
                benchmark="",
                metric=errors.text(raw, "name", path, required=True),
                unit=errors.text(raw, "unit", path),
                direction=direction,
                value=errors.number(raw.get("value"), f"{path}.value"),
            )
            push.points.append(point)

    return parse


FORMATS: dict[str, Callable[[Any, ParsedPush, _Errors], None]] = {
    "native": _parse_native,
    "pytest-benchmark": _parse_pytest_benchmark,
    "google-benchmark": _parse_google_benchmark,
    "github-action-benchmark": _action_parser("lower_is_better"),
    "customSmallerIsBetter": _action_parser("lower_is_better"),
    "customBiggerIsBetter": _action_parser("higher_is_better"),
}


def detect_format(doc: Any) -> str | None:
    """Name the format of a decoded document, or None.

    >>> detect_format([{"name": "x", "unit": "ms", "value": 1}])
    'github-action-benchmark'
    >>> detect_format({"benchmarks": [], "context": {}})
    'google-benchmark'
    """
    if isinstance(doc, list):
        return "github-action-benchmark"
    if not isinstance(doc, dict):
        return None
    if "points" in doc:
        return "native"
    if "benchmarks" in doc and "context" in doc:
        return "google-benchmark"
    if "benchmarks" in doc and ("machine_info" in doc or "commit_info" in doc):
        return "pytest-benchmark"
    return None


_LIMITS = {"project": 128, "commit": 64, "branch": 256, "run_id": 256, "url": 1024}
_POINT_LIMITS = {"benchmark": 256, "metric": 128, "unit": 32, "hash": 128}


def _check_lengths(push: ParsedPush, errors: _Errors) -> None:
    """Refuse what the columns cannot hold, so a long name is a 422, not a failed insert."""
    for key, limit in _LIMITS.items():
        if len(getattr(push, key)) > limit:
            errors.add(f"$.{key}", f"longer than {limit} characters")
    for i, point in enumerate(push.points):
        for key, limit in _POINT_LIMITS.items():
            if len(getattr(point, key) or "") > limit:
                errors.add(f"$.points[{i}].{key}", f"longer than {limit} characters")


def _apply_defaults(push: ParsedPush, defaults: dict[str, str], errors: _Errors) -> None:
    for key in ("project", "commit", "branch", "run_id", "url"):
        if not getattr(push, key) and defaults.get(key):
            setattr(push, key, defaults[key])
    for point in push.points:
        point.benchmark = point.benchmark or defaults.get("benchmark", "")
    if not push.project:
        errors.add("$.project", "is required (in the document or as ?project=)")
    if not (push.run_id or push.url or push.commit):
        errors.add("$.run_id", "a run needs run_id, url or commit (in the document or the query)")
    if not push.points:
        errors.add("$", "the document has no points")
    if len(push.points) > MAX_POINTS:
        errors.add("$", f"{len(push.points)} points, the limit is {MAX_POINTS} per push")
    _check_lengths(push, errors)
    seen: set[tuple[str, str]] = set()
    for i, point in enumerate(push.points):
        if not point.benchmark:
            errors.add(f"$.points[{i}].benchmark", "is required (in the document or ?benchmark=)")
        ident = (point.benchmark, point.metric)
        if ident in seen:
            errors.add(f"$.points[{i}]", f"metric {point.metric!r} appears twice in one run")
        seen.add(ident)


def parse_document(
    doc: Any, *, fmt: str | None = None, defaults: dict[str, str] | None = None
) -> ParsedPush:
    """Validate a decoded JSON document and normalise it.

    Args:
        doc: the decoded JSON.
        fmt: a name from `FORMATS`, or None to detect it.
        defaults: run fields for formats that lack them (``RUN_FIELDS``).

    Returns:
        The run fields and points, ready to store.

    Raises:
        MetricDocumentError: with every problem found and its JSON path.
    """
    name = fmt or detect_format(doc)
    if name not in FORMATS:
        known = ", ".join(FORMATS)
        what = f"unknown format {fmt!r}" if fmt else "cannot tell the format of this document"
        raise MetricDocumentError([Problem("$", f"{what}; known formats: {known}")])
    errors = _Errors()
    push = ParsedPush(format=name)
    FORMATS[name](doc, push, errors)
    _apply_defaults(push, defaults or {}, errors)
    if errors.problems:
        raise MetricDocumentError(errors.problems)
    return push

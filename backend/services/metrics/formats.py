"""Metric document formats: detect, validate and normalise to one `ParsedPush` (pure code).

Every problem is collected with its JSON path (``$.points[3].samples[1]``) so a CI job sees
all its mistakes at once, and nothing is stored when there is any.

Public surface: `parse_document`, `ParsedPush`, `ParsedPoint`, `Problem`,
`MetricDocumentError`, `FORMATS`, `MAX_POINTS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from backend.services.metrics.compile_times import compile_time_points
from backend.services.metrics.problems import MetricDocumentError, Problem, ProblemCollector
from backend.services.series import TimeWindow, parse_timestamp

__all__ = [
    "FORMATS",
    "MAX_POINTS",
    "MetricDocumentError",
    "ParsedPoint",
    "ParsedPush",
    "Problem",
    "parse_document",
]

MAX_POINTS = 10_000
DIRECTIONS = ("lower_is_better", "higher_is_better")
RUN_FIELDS = ("project", "commit", "branch", "run_id", "url", "benchmark")


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
    # The document's own value and where it was; parse_document checks it against the window.
    timestamp_raw: Any = None
    timestamp_path: str = "$.timestamp"
    environment: dict[str, Any] = field(default_factory=dict)
    points: list[ParsedPoint] = field(default_factory=list)


def _native_point(
    raw: Any, path: str, benchmark: str, errors: ProblemCollector
) -> ParsedPoint | None:
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


def _parse_native(doc: Any, push: ParsedPush, errors: ProblemCollector) -> None:
    """The native run document: run fields, an environment, and a list of points."""
    if not isinstance(doc, dict):
        errors.add("$", "expected an object")
        return
    for key in ("project", "commit", "branch", "run_id", "url"):
        setattr(push, key, errors.text(doc, key, "$"))
    push.trace_id = errors.text(doc, "trace_id", "$") or None
    push.timestamp_raw = doc.get("timestamp")
    env = doc.get("environment", {})
    if not isinstance(env, dict):
        errors.add("$.environment", "expected an object")
    elif errors.storable(env, "$.environment"):
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


def _parse_pytest_benchmark(doc: Any, push: ParsedPush, errors: ProblemCollector) -> None:
    """pytest-benchmark ``--benchmark-json``: seconds, summarised, raw rounds optional."""
    benchmarks = _benchmarks(doc, errors)
    if benchmarks is None:
        return
    commit = doc.get("commit_info") or {}
    if isinstance(commit, dict):
        # Outside a git checkout pytest-benchmark writes placeholders; the query fills those.
        cid, branch = errors.text(commit, "id", "$.commit_info"), commit.get("branch")
        push.commit = "" if cid == "unversioned" else cid
        if isinstance(branch, str) and branch != "(unknown)":
            push.branch = branch if errors.storable(branch, "$.commit_info.branch") else ""
    push.timestamp_raw, push.timestamp_path = doc.get("datetime"), "$.datetime"
    machine = doc.get("machine_info")
    if isinstance(machine, dict):
        keep = ("node", "processor", "machine", "python_version", "system", "release")
        env = {k: machine[k] for k in keep if k in machine}
        push.environment = env if errors.storable(env, "$.machine_info") else {}
    for i, bench in enumerate(benchmarks):
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


def _parse_google_benchmark(doc: Any, push: ParsedPush, errors: ProblemCollector) -> None:
    """Google Benchmark JSON: repetitions become samples; aggregates only when alone."""
    benchmarks = _benchmarks(doc, errors)
    if benchmarks is None:
        return
    context = doc.get("context")
    if isinstance(context, dict):
        env = {k: v for k, v in context.items() if not isinstance(v, list | dict)}
        push.environment = env if errors.storable(env, "$.context") else {}
        push.timestamp_raw, push.timestamp_path = context.get("date"), "$.context.date"
    by_key: dict[tuple[str, str], ParsedPoint] = {}
    aggregates: dict[tuple[str, str], float] = {}
    for i, bench in enumerate(benchmarks):
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


def _benchmarks(doc: Any, errors: ProblemCollector) -> list[Any] | None:
    """The `benchmarks` list of a pytest-benchmark or Google Benchmark document."""
    if not isinstance(doc, dict):
        errors.add("$", "expected an object")
        return None
    benchmarks = doc.get("benchmarks") or []
    if not isinstance(benchmarks, list):
        errors.add("$.benchmarks", f"expected a list, got {type(benchmarks).__name__}")
        return None
    return benchmarks


def _action_parser(direction: str) -> Callable[[Any, ParsedPush, ProblemCollector], None]:
    def parse(doc: Any, push: ParsedPush, errors: ProblemCollector) -> None:
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


def _parse_compile_times(doc: Any, push: ParsedPush, errors: ProblemCollector) -> None:
    """torch.compile's `compile_times(repr="csv")` table (`compile_times`); ?benchmark= names
    the model."""
    for metric, unit, value, samples in compile_time_points(doc, errors):
        push.points.append(ParsedPoint("", metric, unit, value=value, samples=samples))


FORMATS: dict[str, Callable[[Any, ParsedPush, ProblemCollector], None]] = {
    "native": _parse_native,
    "pytest-benchmark": _parse_pytest_benchmark,
    "google-benchmark": _parse_google_benchmark,
    "github-action-benchmark": _action_parser("lower_is_better"),
    "customSmallerIsBetter": _action_parser("lower_is_better"),
    "customBiggerIsBetter": _action_parser("higher_is_better"),
    "torch-compile-times": _parse_compile_times,
}


def detect_metric_format(doc: Any) -> str | None:
    """Name the format of a decoded document, or None.

    >>> detect_metric_format([{"name": "x", "unit": "ms", "value": 1}])
    'github-action-benchmark'
    >>> detect_metric_format({"benchmarks": [], "context": {}})
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


def _check_lengths(push: ParsedPush, errors: ProblemCollector) -> None:
    """Refuse what the columns cannot hold, so a long name is a 422, not a failed insert."""
    for key, limit in _LIMITS.items():
        if len(getattr(push, key)) > limit:
            errors.add(f"$.{key}", f"longer than {limit} characters")
    for i, point in enumerate(push.points):
        for key, limit in _POINT_LIMITS.items():
            if len(getattr(point, key) or "") > limit:
                errors.add(f"$.points[{i}].{key}", f"longer than {limit} characters")


def _apply_defaults(push: ParsedPush, defaults: dict[str, str], errors: ProblemCollector) -> None:
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
    doc: Any,
    *,
    fmt: str | None = None,
    defaults: dict[str, str] | None = None,
    window: TimeWindow | None = None,
) -> ParsedPush:
    """Validate a decoded JSON document and normalise it.

    Args:
        doc: the decoded JSON.
        fmt: a name from `FORMATS`, or None to detect it.
        defaults: run fields for formats that lack them (``RUN_FIELDS``).
        window: the accepted run timestamps; None means the settings' window.

    Returns:
        The run fields and points, ready to store.

    Raises:
        MetricDocumentError: with every problem found and its JSON path.
    """
    name = fmt or detect_metric_format(doc)
    if name not in FORMATS:
        known = ", ".join(FORMATS)
        what = f"unknown format {fmt!r}" if fmt else "cannot tell the format of this document"
        raise MetricDocumentError([Problem("$", f"{what}; known formats: {known}")])
    errors = ProblemCollector()
    push = ParsedPush(format=name)
    FORMATS[name](doc, push, errors)
    try:
        push.timestamp = parse_timestamp(
            push.timestamp_raw, window or TimeWindow.current(), now=push.timestamp
        )
    except ValueError as e:
        errors.add(push.timestamp_path, str(e))
    _apply_defaults(push, defaults or {}, errors)
    if errors.problems:
        raise MetricDocumentError(errors.problems)
    return push

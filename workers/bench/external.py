"""The two user-supplied workload kinds: a Python callable and an external command.

A callable `module:function(params, seed, device)` returns a list of native points, or
`{"points": [...], "outputs": [tensors]}` so the runner can hash its outputs. Only
registered callables run: the examples shipped here, and the entry points a team's
package declares in the `perfdash.workloads` group (named by the entry point's name or
its `module:function` value). Any other importable function, stdlib or site-packages,
is refused: `logging.config:fileConfig` fed an uploaded INI file runs its `args=` line.
A command is an argv list (never a shell string); `{name}` in an argument is replaced by
the sweep point's param, and the params also arrive as JSON in `BENCH_PARAMS` (the seed
in `BENCH_SEED`; no `PERFDASH_*` name, which the runner never passes on). Its stdout
(or `output_file`) must be native JSON, pytest-benchmark or Google Benchmark JSON; the
Celery task hands the document to the metrics push, which detects the format.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any


class WorkloadError(Exception):
    """A user workload broke its contract; the message says how."""


ENTRY_POINT_GROUP = "perfdash.workloads"
# The shipped examples, allowed without installed package metadata.
BUILTIN_CALLABLES = frozenset(
    f"workers.bench.examples:{name}" for name in ("matmul_chain", "crash", "sleep", "fail")
)


def registered_callables() -> dict[str, str]:
    """Every callable that may run: name or `module:function` -> `module:function`."""
    allowed = {target: target for target in BUILTIN_CALLABLES}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        allowed[ep.name] = allowed[ep.value] = ep.value
    return allowed


def load_callable(target: str) -> Any:
    """Import a registered callable, by entry-point name or `module:function`.

    Raises:
        WorkloadError: it is not registered, cannot be imported or is not callable.
    """
    resolved = registered_callables().get(target)
    if resolved is None:
        raise WorkloadError(
            f"callable workload {target!r} is not registered: declare it as an entry point "
            f"in the {ENTRY_POINT_GROUP!r} group of the package that defines it "
            "(arbitrary importable functions are never run)"
        )
    module_name, _, attr = resolved.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise WorkloadError(f"cannot import callable workload {target!r}: {e}") from e
    if not callable(fn):
        raise WorkloadError(f"{target!r} is not callable")
    return fn


def split_callable_result(result: Any, target: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """Points and outputs (tensors to hash) from what a callable returned."""
    points, outputs = (result, []) if isinstance(result, list) else (None, [])
    if isinstance(result, Mapping):
        points, outputs = result.get("points"), list(result.get("outputs") or [])
    if not isinstance(points, list) or not all(
        isinstance(p, Mapping) and "metric" in p for p in points
    ):
        raise WorkloadError(
            f"{target} must return a list of points ({{'metric': ..., 'value'|'samples': ...}}) "
            "or {'points': [...], 'outputs': [...]}"
        )
    return [dict(p) for p in points], outputs


def run_command(
    argv: list[str],
    params: Mapping[str, Any],
    *,
    seed: int,
    timeout_s: float,
    output_file: str | None,
    workdir: Path,
) -> dict[str, Any]:
    """Run the command once for a sweep point and return the JSON document it produced."""
    try:
        args = [arg.format_map(dict(params)) for arg in argv]
    except (KeyError, ValueError, IndexError) as e:
        raise WorkloadError(f"command argument placeholder not in params: {e}") from e
    env = {
        **os.environ,
        "BENCH_PARAMS": json.dumps(params),
        "BENCH_SEED": str(seed),
    }
    proc = subprocess.run(
        args, cwd=workdir, env=env, capture_output=True, timeout=timeout_s, check=False
    )
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-2000:]
        raise WorkloadError(f"command {args[0]!r} exited with {proc.returncode}: {tail}")
    text = (workdir / output_file).read_text() if output_file else proc.stdout.decode()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        where = output_file or "stdout"
        raise WorkloadError(f"command {args[0]!r} wrote no JSON to {where}: {e}") from e
    if not isinstance(doc, dict):
        raise WorkloadError(f"command {args[0]!r} output is JSON but not an object")
    return doc

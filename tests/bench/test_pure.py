"""Pure helpers of the benchmark runner and scheduler: no torch, no database."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backend.models.benchmarks import BUILTIN_WORKLOADS, BenchmarkSpecCreate
from backend.services.benchmarks.cron import CronError, due_between, parse_cron
from backend.services.benchmarks.specs import spec_hash
from workers.bench.external import WorkloadError, run_command, split_callable_result
from workers.bench.launcher import _read
from workers.bench.points import memory_points, rate_points
from workers.bench.stats import percentile, summarize
from workers.bench.sweep import expand_sweep, point_label
from workers.cli.benchmarks import load_specs

T0 = datetime(2026, 11, 30, 2, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expr", "when", "fires"),
    [
        ("0 3 * * *", datetime(2026, 11, 30, 3, 0), True),
        ("0 3 * * *", datetime(2026, 11, 30, 3, 1), False),
        ("*/15 * * * *", datetime(2026, 11, 30, 7, 45), True),
        ("0 0 * * 0", datetime(2026, 11, 29, 0, 0), True),  # a Sunday
        ("0 0 * * 7", datetime(2026, 11, 29, 0, 0), True),
        ("0 0 1 * 1", datetime(2026, 11, 30, 0, 0), True),  # a Monday: either day field
        ("30 2 * 1-6 *", datetime(2026, 11, 30, 2, 30), False),
        ("@hourly", datetime(2026, 11, 30, 5, 0), True),
    ],
)
def test_cron_matches(expr: str, when: datetime, fires: bool) -> None:
    assert parse_cron(expr).matches(when) is fires


@pytest.mark.parametrize("expr", ["* * * *", "60 * * * *", "a * * * *", "5-1 * * * *"])
def test_bad_cron_is_refused(expr: str) -> None:
    with pytest.raises(CronError):
        parse_cron(expr)


def test_due_between_returns_the_latest_firing_once() -> None:
    cron = parse_cron("0 3 * * *")
    fired = due_between(cron, T0, T0 + timedelta(minutes=5))
    assert fired == datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
    assert due_between(cron, fired, T0 + timedelta(minutes=10)) is None


def test_sweep_and_labels() -> None:
    points = expand_sweep({"dtype": "bf16"}, {"b": [1, 8], "s": [512, 2048]})
    assert len(points) == 4 and points[-1] == {"dtype": "bf16", "b": 8, "s": 2048}
    assert point_label(points[1], ["b", "s"]) == "b=1,s=2048"


def test_stats_and_rates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert summarize([3.0, 1.0, 2.0]) == {"p50": 2.0, "p95": 2.9, "max": 3.0, "min": 1.0,
                                          "mean": 2.0}  # fmt: skip
    rates = rate_points(
        [2.0, 2.0], flops=4e12, flops_metric="tflops", nbytes=2e9, bandwidth_metric="gbps",
        items=1000, items_metric="tokens_per_s",
    )  # fmt: skip
    assert {r["metric"]: r["value"] for r in rates} == {
        "tflops": 2000.0, "gbps": 1000.0, "tokens_per_s": 500000.0
    }  # fmt: skip
    assert memory_points(None, None, None) == []
    assert [m["metric"] for m in memory_points(90, 100, 10.0)][-1] == "fragmentation_pct"


def test_callable_results_are_checked() -> None:
    points, outputs = split_callable_result([{"metric": "x", "value": 1}], "m:f")
    assert points == [{"metric": "x", "value": 1}] and outputs == []
    with pytest.raises(WorkloadError, match="must return a list of points"):
        split_callable_result({"nope": 1}, "m:f")


def test_command_gets_params_and_no_shell(tmp_path: Path) -> None:
    # Literal braces are doubled, as in str.format: every argument is a template.
    script = "import json,os,sys; print(json.dumps({{'argv': sys.argv[1:], "
    script += "'params': json.loads(os.environ['BENCH_PARAMS'])}}))"
    doc = run_command([sys.executable, "-c", script, "{size}; echo pwned"], {"size": 4},
                      seed=0, timeout_s=60, output_file=None, workdir=tmp_path)  # fmt: skip
    assert doc == {"argv": ["4; echo pwned"], "params": {"size": 4}}
    with pytest.raises(WorkloadError, match="placeholder"):
        run_command(["{missing}"], {}, seed=0, timeout_s=5, output_file=None, workdir=tmp_path)


def test_launcher_reads_how_the_runner_ended(tmp_path: Path) -> None:
    assert _read(tmp_path, -9, "log").reason == "killed"
    assert "SIGKILL" in (_read(tmp_path, -9, "").error or "")
    (tmp_path / "result.json").write_text(
        json.dumps({"status": "failed", "reason": "oom", "error": "out of GPU memory"})
    )
    failed = _read(tmp_path, 0, "")
    assert (failed.reason, failed.error) == ("oom", "out of GPU memory")


def test_spec_yaml_is_validated_before_anything_is_sent(tmp_path: Path) -> None:
    good = tmp_path / "ok.yaml"
    good.write_text("benchmarks:\n  - {name: g, workload: gemm, sweep: {m: [1, 2]}}\n")
    assert load_specs(good)[0]["sweep"] == {"m": [1, 2]}
    bad = tmp_path / "bad.yaml"
    bad.write_text("benchmarks:\n  - {name: g, workload: gemm}\n  - {name: h, workload: nope}\n")
    with pytest.raises(ValueError, match=r"benchmarks\[1\] \(h\)"):
        load_specs(bad)


def test_spec_hash_ignores_descriptions() -> None:
    a = BenchmarkSpecCreate(name="a", workload="gemm", description="x")
    b = BenchmarkSpecCreate(name="b", workload="gemm", description="y", schedule="@daily")
    assert spec_hash(a) == spec_hash(b)
    assert spec_hash(a) != spec_hash(BenchmarkSpecCreate(name="a", workload="gemm", seed=1))


def test_backend_knows_every_builtin_workload() -> None:
    torch_workloads = pytest.importorskip("workers.bench.workloads")
    assert set(BUILTIN_WORKLOADS) == {*torch_workloads.BUILTINS, torch_workloads.ALLREDUCE}

"""`perfdash push --dry-run` on files the real tools wrote (tests/data/metrics, made by
make_metric_fixtures.py): the names, units and values each point gets, worked out from
the raw JSON here; no server (the URL points at a closed port) and no token."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from workers.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"
NO_SERVER = ["--url", "http://127.0.0.1:9", "--token-env", "PERFDASH_TEST_UNSET_TOKEN"]


def _dry_run(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["push", str(path), "--dry-run", *NO_SERVER, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _rows(out: str) -> dict[tuple[str, str], list[str]]:
    """(benchmark, metric) -> [unit, direction, value, n] from the printed table."""
    lines = out.splitlines()
    assert lines[1].split() == ["BENCHMARK", "METRIC", "UNIT", "DIRECTION", "VALUE", "N"]
    return {(c[0], c[1]): c[2:] for c in (line.split() for line in lines[2:])}


def _close(printed: str, expected: float) -> bool:
    return abs(float(printed) - expected) <= 1e-5 * abs(expected)


def test_pytest_benchmark_points_are_fullname_and_time_ms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    raw = json.loads((DATA / "pytest_benchmark.json").read_text())
    code, out, err = _dry_run(DATA / "pytest_benchmark.json", capsys, "--project", "ci",
                              "--commit", "abc123")  # fmt: skip
    assert code == 0 and err == ""
    assert out.splitlines()[0] == (
        "pytest-benchmark: 2 point(s) for project 'ci', run 'abc123' (dry run: nothing sent)"
    )
    rows = _rows(out)
    assert len(rows) == len(raw["benchmarks"])
    for bench in raw["benchmarks"]:
        unit, direction, value, n = rows[(bench["fullname"], "time_ms")]
        seconds = bench["stats"]["data"]
        assert (unit, direction, n) == ("ms", "lower_is_better", str(len(seconds)))
        assert _close(value, statistics.median(seconds) * 1e3)


def test_google_benchmark_repetitions_are_samples_of_each_counter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    raw = json.loads((DATA / "google_benchmark.json").read_text())
    code, out, _ = _dry_run(DATA / "google_benchmark.json", capsys, "--project", "ci",
                            "--run-id", "7")  # fmt: skip
    assert code == 0
    runs = [b for b in raw["benchmarks"] if b["run_type"] == "iteration"]
    expected = {
        "real_time": (runs[0]["time_unit"], "lower_is_better"),
        "cpu_time": (runs[0]["time_unit"], "lower_is_better"),
        "items_per_second": ("1/s", "higher_is_better"),
    }
    rows = _rows(out)
    assert set(rows) == {(runs[0]["run_name"], m) for m in expected}
    for metric, (unit, direction) in expected.items():
        printed = rows[(runs[0]["run_name"], metric)]
        assert printed[:2] == [unit, direction] and printed[3] == str(len(runs))
        assert _close(printed[2], statistics.median(r[metric] for r in runs))


def test_google_benchmark_aggregates_only_uses_the_mean_in_its_unit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What `--benchmark_report_aggregates_only=true` writes: no repetition rows."""
    raw = json.loads((DATA / "google_benchmark.json").read_text())
    raw["benchmarks"] = [b for b in raw["benchmarks"] if b["run_type"] == "aggregate"]
    path = tmp_path / "aggregates.json"
    path.write_text(json.dumps(raw))
    code, out, _ = _dry_run(path, capsys, "--project", "ci", "--run-id", "7")
    assert code == 0
    mean = next(b for b in raw["benchmarks"] if b["aggregate_name"] == "mean")
    rows = _rows(out)
    assert rows[(mean["run_name"], "items_per_second")][:2] == ["1/s", "higher_is_better"]
    assert rows[(mean["run_name"], "real_time")][:2] == [mean["time_unit"], "lower_is_better"]
    assert _close(rows[(mean["run_name"], "real_time")][2], mean["real_time"])


def _broken_pytest() -> Any:
    raw = json.loads((DATA / "pytest_benchmark.json").read_text())
    raw["benchmarks"][1]["stats"] = "fast"
    raw["benchmarks"][0]["stats"]["data"][3] = "NaN?"
    return raw


@pytest.mark.parametrize(
    ("content", "messages"),
    [
        ("{not json", ["cannot read"]),
        ("", ["cannot read"]),
        (json.dumps({"hello": 1}), ["$: cannot tell the format of this document"]),
        (
            json.dumps(_broken_pytest()),
            ["$.benchmarks[0].stats.data[3]:", "$.benchmarks[1].stats: expected an object"],
        ),
        (
            json.dumps({"context": {}, "benchmarks": [{"run_name": "x", "real_time": "slow"}]}),
            ["$.benchmarks[0].real_time:"],
        ),
    ],
    ids=["truncated", "empty", "unknown", "pytest-bad-stats", "google-bad-number"],
)
def test_malformed_files_are_refused_where_the_server_would(
    content: str, messages: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bench.json"
    path.write_text(content)
    code, out, err = _dry_run(path, capsys, "--project", "ci", "--commit", "abc")
    assert code == 2 and out == ""
    for message in messages:
        assert message in err, err

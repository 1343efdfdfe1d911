"""Make the metric-format fixtures with the real tools (run once; outputs are committed).

    .venv/bin/pip install pytest-benchmark google-benchmark
    .venv/bin/python tests/data/metrics/make_metric_fixtures.py
    .venv/bin/pip uninstall -y pytest-benchmark   # its pytest plugin is not wanted in CI

Writes `pytest_benchmark.json` (pytest-benchmark 5, with raw rounds), `google_benchmark.json`
(the Python bindings of Google Benchmark, 3 repetitions and a counter) and
`github_action_benchmark.json` (the customSmallerIsBetter shape from that action's README;
it is written by the user's own script, so there is no tool to run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PYTEST_BENCH = """
def _work(n):
    return sum(i * i for i in range(n))

def test_sum_squares_small(benchmark):
    benchmark.pedantic(_work, args=(1000,), rounds=20, iterations=5)

def test_sum_squares_large(benchmark):
    benchmark.pedantic(_work, args=(20000,), rounds=10, iterations=2)
"""

GOOGLE_BENCH = """
import google_benchmark as benchmark

@benchmark.register
@benchmark.option.repetitions(3)
def sum_squares(state):
    while state:
        sum(i * i for i in range(1000))
    state.counters["items_per_second"] = benchmark.Counter(
        1000 * state.iterations, benchmark.Counter.kIsRate)

if __name__ == "__main__":
    benchmark.main()
"""

ACTION = [
    {"name": "step_time", "unit": "ms", "value": 12.4, "range": "3", "extra": "H200 x1"},
    {"name": "peak_mem", "unit": "MiB", "value": 40960},
]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / "test_bench.py"
        test.write_text(PYTEST_BENCH)
        out = HERE / "pytest_benchmark.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(test),
                "-q",
                "-p",
                "no:cacheprovider",
                f"--benchmark-json={out}",
                "--benchmark-save-data",
                "--rootdir",
                tmp,
            ],
            check=True,
            cwd=tmp,
        )
        script = Path(tmp) / "gbench.py"
        script.write_text(GOOGLE_BENCH)
        gout = HERE / "google_benchmark.json"
        subprocess.run(
            [
                sys.executable,
                str(script),
                "--benchmark_format=json",
                f"--benchmark_out={gout}",
                "--benchmark_min_time=0.01s",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    (HERE / "github_action_benchmark.json").write_text(json.dumps(ACTION, indent=2) + "\n")


if __name__ == "__main__":
    main()

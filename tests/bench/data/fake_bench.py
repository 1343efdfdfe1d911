"""A stand-in for a team's benchmark binary: prints Google Benchmark or native JSON.

Used by the command-kind tests; `--size` comes from the spec's sweep via `{size}`.
"""

import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("--format", choices=["gbench", "native", "garbage"], required=True)
parser.add_argument("--size", type=int, default=1)
args = parser.parse_args()
params = json.loads(os.environ["BENCH_PARAMS"])
assert params["size"] == args.size
if args.format == "gbench":
    doc = {
        "context": {"date": "2026-11-30T00:00:00+00:00", "host_name": "test"},
        "benchmarks": [
            {
                "name": f"BM_copy/{args.size}",
                "run_type": "iteration",
                "iterations": 1000,
                "real_time": 12.5 * args.size,
                "cpu_time": 12.0 * args.size,
                "time_unit": "ns",
            }
        ],
    }
    print(json.dumps(doc))
elif args.format == "native":
    print(json.dumps({"points": [{"metric": "latency_ms", "unit": "ms", "samples": [1.0, 2.0]}]}))
else:
    print("not json")

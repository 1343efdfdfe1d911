"""Issue 40 on a GPU host: the runner subprocess, under the allow-listed environment,
still sees the GPU, and a benchmark that prints its environment sees no secret.

`python3 perf/run_refs/gpu_env_check.py OUT_DIR` (device call; needs only torch). The
worker's environment gets a fake database URL and token first; two runs go through
`workers.bench.launcher.launch`, the task's own call: the built-in gemm on `auto`
(must pick cuda and report the GPU) and a command that dumps its environment.
Writes OUT_DIR/gpu_env_check.json with PASS/FAIL per expectation.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from workers.bench.launcher import launch
from workers.bench.spec import RunRequest

DUMP = (
    "import json, os; open('env.json', 'w').write(json.dumps(dict(os.environ))); "
    "print(json.dumps({{'benchmark': 'env', 'points': [{{'metric': 'one', 'value': 1.0}}]}}))"
)  # braces doubled: the runner fills `{param}` placeholders in a command's arguments


def main(out: Path) -> int:
    os.environ["PERFDASH_DATABASE_URL"] = "postgresql://secret@db/perfdash"
    os.environ["UPSTREAM_API_TOKEN"] = "do-not-leak"
    work = Path("/tmp/run_refs")
    gemm = RunRequest(run_id="gemm", name="gemm", kind="builtin", workload="gemm",
                      params={"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
                      warmup=5, iters=20, deterministic="off")  # fmt: skip
    cmd = RunRequest(run_id="env", name="env", kind="command", workload="",
                     command=[sys.executable, "-c", DUMP], deterministic="off")  # fmt: skip
    g = launch(gemm, work / "gemm")
    c = launch(cmd, work / "env")
    env_file = next((work / "env").rglob("env.json"), None)
    env = json.loads(env_file.read_text()) if env_file else {}
    environment = (g.result or {}).get("environment") or {}
    checks = {
        "gemm succeeded": g.reason is None,
        "gemm ran on the GPU": bool(environment.get("gpu_model")),
        "command succeeded": c.reason is None,
        "command saw no PERFDASH_ or token variable": bool(env)
        and not [k for k in env if k.startswith("PERFDASH_") or "TOKEN" in k],
    }
    report = {
        "checks": {k: "PASS" if v else "FAIL" for k, v in checks.items()},
        "gpu_model": environment.get("gpu_model"),
        "gemm_error": g.error, "command_error": c.error,
        "command_env_names": sorted(env),
        "gemm_points": (g.result or {}).get("points"),
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_env_check.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report["checks"], indent=1), report["gpu_model"])
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))

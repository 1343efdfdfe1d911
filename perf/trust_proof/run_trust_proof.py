"""Issue 37's proof: verdicts that hold on short loops, on the H200, through perfdash's path.

Starts the embedded perfdash (`serve` + one `worker --queues gpu`, as issue 22's proof
does, whose helpers this reuses), applies `specs.yaml`, then through the HTTP API and the
CLI: five bursts after >= 8 s idle (expected: none `throttled`), a ~10 s sustained GEMM
(expected: `throttled`/`sw_power_cap`), `perfdash bench run trust-aa --repeat 5 --wait`
with a relative SLA that has no tolerance (expected: a noise band, and `insufficient_data`
until it exists), and the contended GEMM beside an idle context holder (expected: not
`contended`, `other_process_present`) and beside a busy contender (expected: `contended`).
Writes `trust_proof.json` (rows, expectations, PASS/FAIL) as it goes, `runs.json`, the CLI's
output and a copy of `perfdash.db` to OUT_DIR.

    python perf/trust_proof/run_trust_proof.py perf/trust_proof/specs.yaml OUT_DIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gpu_guard"))
import run_guard_proof as guard  # noqa: E402  (puts perf/bench_proof on the path too)

base = guard.base
BURSTS, IDLE_S = 5, float(os.environ.get("TRUST_IDLE_S", "8"))


def _flags(row: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f[0], f[1]) for f in row["flags"]}


def _other(mode: str, out: Path) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """The other process, once it is on the GPU, and nvidia-smi's per-process log beside it."""
    proc = subprocess.Popen([sys.executable, str(HERE / "other_process.py"), mode],
                            stdout=subprocess.PIPE, start_new_session=True)  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()  # "ready"
    with (out / f"pmon_{mode}.txt").open("wb") as log:
        pmon = subprocess.Popen(["nvidia-smi", "pmon", "-s", "um", "-d", "1"], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    time.sleep(2)
    return proc, pmon


def _token(env: dict[str, str]) -> dict[str, str]:
    """An admin token, made the way an operator makes one (SLA writes need a token)."""
    argv = [sys.executable, "-m", "workers.cli", "token", "create", "--scope", "admin"]
    token = subprocess.run(argv, env=env, capture_output=True, check=True, text=True)
    return {"Authorization": f"Bearer {token.stdout.split()[-1]}"}


def _aa(out: Path, proof: dict[str, Any], auth: dict[str, str]) -> list[dict[str, Any]]:
    sla = {"name": "trust-aa-relative", "project": "trust", "benchmark": "trust-aa",
           "metric": "tflops", "rule": "relative", "baseline_runs": 3}  # fmt: skip
    stored = httpx.post(f"{base.URL}/api/v1/slas", json=sla, headers=auth, timeout=30)
    stored.raise_for_status()
    sla_id = stored.json()["id"]
    cli = subprocess.run(
        [sys.executable, "-m", "workers.cli", "bench", "run", "trust-aa", "--repeat", "5",
         "--wait", "--timeout", "300", "--url", base.URL],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    (out / "aa_cli.txt").write_text(f"rc={cli.returncode}\n{cli.stdout}\n--- stderr\n{cli.stderr}")
    first = cli.stdout.split("queued run ", 1)[1].split()[0]
    batch = httpx.get(f"{base.URL}/api/v1/benchmark-runs/{first}/aa-batch").json()
    params = {"project": "trust", "benchmark": "trust-aa", "metric": "tflops",
              "baseline_runs": 3}  # fmt: skip
    noise = httpx.get(f"{base.URL}/api/v1/metrics/series/noise", params=params).json()
    evals = httpx.get(f"{base.URL}/api/v1/slas/{sla_id}/evaluations").json()
    items = evals["items"] if isinstance(evals, dict) else evals
    verdicts = [
        [e["verdict"], e["details"].get("insufficient_data"), e["details"].get("tolerance_pct")]
        for e in items
    ]
    runs = [httpx.get(f"{base.URL}/api/v1/benchmark-runs/{r['id']}").json() for r in batch["runs"]]
    proof["aa"] = {
        "cli_rc": cli.returncode,
        "batch": batch,
        "noise": noise,
        "sla_verdicts": verdicts,
        "rows": [guard._row(r) for r in runs],
        "expected": "a noise band from --repeat 5",
        "pass": noise.get("spread_pct") is not None,
    }
    return runs


def main() -> int:
    """Run the proof and write its files."""
    specs, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    data, env, serve, worker = guard.start_perfdash(out, "/tmp/perfdash-trust")
    runs: list[dict[str, Any]] = []
    proof: dict[str, Any] = {}

    def save() -> None:
        proof["wall_s"] = round(time.monotonic() - started, 1)
        (out / "trust_proof.json").write_text(json.dumps(proof, indent=2))
        (out / "runs.json").write_text(json.dumps(runs))

    try:
        subprocess.run([sys.executable, "-m", "workers.cli", "bench", "apply", str(specs),
                        "--url", base.URL], check=True)  # fmt: skip
        guard._wait_runner()
        bursts = []
        for _ in range(BURSTS):
            time.sleep(IDLE_S)
            runs.append(guard._run("trust-burst"))
            bursts.append(guard._row(runs[-1]))
            print("burst", bursts[-1]["samples"], sorted(_flags(bursts[-1])), flush=True)
        throttled = [r for r in bursts if any(f[0] == "throttled" for f in r["flags"])]
        want = f"0 of {BURSTS} throttled"
        proof["bursts"] = {"rows": bursts, "throttled": len(throttled), "expected": want,
                           "pass": not throttled}  # fmt: skip
        save()
        time.sleep(2)
        runs.append(guard._run("trust-sustained"))
        row = guard._row(runs[-1])
        proof["sustained"] = {"row": row, "expected": "throttled / sw_power_cap",
                              "pass": ("throttled", "sw_power_cap") in _flags(row)}  # fmt: skip
        print("sustained", sorted(_flags(row)), flush=True)
        save()
        runs += _aa(out, proof, _token(env))
        print("aa", proof["aa"]["batch"]["message"], proof["aa"]["noise"].get("spread_pct"))
        save()
        for mode, want in (("hold", False), ("busy", True)):
            other, pmon = _other(mode, out)
            try:
                runs.append(guard._run("trust-contend"))
            finally:
                for p in (pmon, other):
                    p.kill()
                    p.wait()
            row = guard._row(runs[-1])
            got = any(f[0] == "contended" for f in row["flags"])
            present = any(f[0] == "other_process_present" for f in row["flags"])
            proof[f"contend_{mode}"] = {
                "row": row, "other_pid": other.pid,
                "expected": "contended" if want else "not contended, other_process_present",
                "pass": got if want else (not got and present),
            }  # fmt: skip
            print(mode, sorted(_flags(row)), flush=True)
            save()
            time.sleep(2)
    finally:
        base._stop(worker)
        parts = ("bursts", "sustained", "aa", "contend_hold", "contend_busy")
        proof["all_pass"] = all(proof.get(k, {}).get("pass") for k in parts)
        save()
        base._stop(serve)
        base._copy_db(data, out)
    return 0 if proof["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""`perfdash token create`, `perfdash push` and `perfdash sla apply` against a real uvicorn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.factories import native
from workers.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"
SLAS_YAML = """
slas:
  - name: small-sum
    project: ci
    benchmark: test_bench.py::test_sum_squares_small
    metric: time_ms
    statistic: p95
    op: "<="
    threshold: 1000
    severity: critical
  - name: large-sum-too-strict
    project: ci
    benchmark: test_bench.py::test_sum_squares_large
    metric: time_ms
    threshold: 0.000001
"""


def _perfdash(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_token_push_and_sla_apply_from_the_command_line(server: str, tmp_path: Path) -> None:
    created = _perfdash("token", "create", "--scope", "metrics:write", "--scope", "slas:write")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("pd_") and "stored only as a hash" in created.stderr
    env = {"CI_TOKEN": token}
    common = ["--url", server, "--token-env", "CI_TOKEN"]

    slas = tmp_path / "slas.yaml"
    slas.write_text(SLAS_YAML)
    dry = _perfdash("sla", "apply", str(slas), *common, "--dry-run", env=env)
    assert (
        dry.stdout.splitlines()[-1]
        == "2 created, 0 updated, 0 unchanged (dry run, nothing changed)"
    )
    applied = _perfdash("sla", "apply", str(slas), *common, env=env)
    assert "+ small-sum" in applied.stdout and applied.returncode == 0
    slas.write_text(SLAS_YAML.replace("threshold: 1000", "threshold: 900"))
    changed = _perfdash("sla", "apply", str(slas), *common, env=env)
    assert "~ small-sum\n    threshold: 1000.0 -> 900.0" in changed.stdout

    push = [str(DATA / "pytest_benchmark.json"), *common, "--project", "ci", "--commit", "abc"]
    first = _perfdash("push", *push, env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "pytest-benchmark: stored 2, duplicates 0"
    assert lines[1].split() == [
        "VERDICT",
        "SLA",
        "SEVERITY",
        "OBSERVED",
        "THRESHOLD",
        "BASELINE",
        "NOTE",
    ]
    by_name = {line.split()[1]: line for line in lines[2:]}
    assert by_name["large-sum-too-strict"].startswith("FAIL")
    assert by_name["small-sum"].split()[:5][::4] == ["PASS", "900"]
    retry = _perfdash("push", *push, "--fail-on-breach", env=env)
    assert retry.returncode == 1
    assert retry.stdout.splitlines()[0] == "pytest-benchmark: stored 0, duplicates 2"


def test_push_errors_are_clear(server: str, tmp_path: Path) -> None:
    no_token = _perfdash(
        "push", str(DATA / "pytest_benchmark.json"), "--url", server, "--token-env", "NOPE_UNSET"
    )
    assert no_token.returncode == 2 and "set $NOPE_UNSET" in no_token.stderr
    created = _perfdash("token", "create", "--scope", "metrics:write")
    env = {"CI_TOKEN": created.stdout.strip()}
    bad = _perfdash(
        "push",
        str(DATA / "pytest_benchmark.json"),
        "--url",
        server,
        "--token-env",
        "CI_TOKEN",
        env=env,
    )
    assert bad.returncode == 2
    assert "HTTP 422" in bad.stderr and "$.project: is required" in bad.stderr
    assert httpx.get(f"{server}/api/v1/metrics/runs").json()["count"] == 0


def test_sla_accept_baseline_from_the_command_line(
    server: str, token: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    sla = {"name": "rel", "project": "llm", "benchmark": "train", "metric": "step_time_ms"}
    sla |= {"rule": "relative", "tolerance_pct": "5"}
    assert httpx.post(f"{server}/api/v1/slas", json=sla, headers=headers).status_code == 201
    for i, value in enumerate([100.0, 101.0, 130.0]):
        doc = native(commit=f"c{i}abcdef", points=[{"metric": "step_time_ms", "value": value}])
        assert httpx.post(f"{server}/api/v1/metrics", json=doc, headers=headers).is_success
    monkeypatch.setenv("CI_TOKEN", token)
    common = ["--url", server, "--token-env", "CI_TOKEN"]
    argv = ["sla", "accept-baseline", "rel", "--commit", "c2", "--reason", "new model", *common]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("rel: commit c2abcdef is the new baseline, accepted by token 'tests")
    assert out.rstrip().endswith(": new model")
    assert main([*argv[:2], "nope", *argv[3:]]) == 2
    assert "no SLA named 'nope'" in capsys.readouterr().err
    assert main([*argv[:4], "zz", *argv[5:]]) == 2
    assert "HTTP 422" in capsys.readouterr().err
    listed = httpx.get(f"{server}/api/v1/slas").json()["items"][0]["id"]
    accepted = httpx.get(f"{server}/api/v1/slas/{listed}/baseline-acceptances").json()
    assert [(a["commit"], a["reason"]) for a in accepted] == [("c2abcdef", "new model")]

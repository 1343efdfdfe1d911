"""Throttle flags judged by evidence, and contention that means use (issue #37).

NVML is the double in `fake_nvml/pynvml.py`, replaying what the H200 did: the probe's
recorded sustained GEMM (perf/gpu_guard/results/nvml_probe_h200.json.gz, 0x4 at ~692 W of
700 W in 1494 of 1500 samples) and the issue's burst readings (0x4 during warm-up at
100-160 W, two or three samples for a 12-35 ms loop). Expected numbers are counted from
those samples here, not taken from the code under test.
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from tests.bench.test_gpu_guard import monitored, phase
from workers.bench.gpu_flags import Rules, evaluate


def _flags(state: dict[str, Any], rules: Rules | None = None) -> set[tuple[str, str]]:
    return {(f["flag"], f["reason"]) for f in evaluate(state, rules or Rules())}


def _burst(n: int, watts: float) -> list[dict[str, Any]]:
    """A burst after idle as the H200 reported it: SwPowerCap (0x4) at `watts` of 700 W,
    clocks at boost (1980 MHz), from the probe's readings just before its burst."""
    rows = phase("idle0")[:n]
    return [{**s, "reasons": 4, "power_mw": int(watts * 1000)} for s in rows]


def test_a_warm_up_power_cap_in_two_samples_is_unjudged_not_throttled() -> None:
    state = monitored(_burst(2, 120))
    gpu = state["gpus"][0]
    assert gpu["samples"] == 2 and gpu["reasons"] == {"sw_power_cap": 1.0}
    assert gpu["reasons_backed"] == {}  # 120 W is far from the 700 W cap
    flags = evaluate(state, Rules())
    assert ("unjudged", "few_samples") in _flags(state)
    assert not [f for f in flags if f["flag"] == "throttled"]
    unjudged = next(f for f in flags if f["flag"] == "unjudged")
    assert "2 samples" in unjudged["detail"] and "fewer than 5" in unjudged["detail"]
    assert "sw_power_cap in 100%" in unjudged["detail"] and "120 W of 700 W" in unjudged["detail"]


def test_a_burst_at_a_stale_low_clock_is_unjudged_not_low_clock() -> None:
    # The H200 proof's second burst (docs/BENCHMARKS.md, issue #37): three equal readings,
    # 1560 MHz and 0x4 at 161 W, for a loop that ran at 709 TFLOP/s.
    rows = [{**s, "sm": 1560, "reasons": 4, "power_mw": 160684} for s in phase("idle0")[:3]]
    state = monitored(rows)
    assert state["gpus"][0]["summary"]["sm_mhz"]["median"] == 1560  # 79 % of 1980
    assert not [f for f in evaluate(state, Rules()) if f["flag"] == "throttled"]
    (unjudged,) = [f for f in evaluate(state, Rules()) if f["flag"] == "unjudged"]
    assert "SM clock median 1560 MHz" in unjudged["detail"]
    assert ("throttled", "low_clock") in _flags(state, Rules(min_samples=3))


def test_a_longer_loop_with_the_warm_up_reason_at_low_power_is_not_throttled() -> None:
    state = monitored(_burst(40, 140))
    assert state["gpus"][0]["samples"] == 40
    assert not {f for f in _flags(state) if f[0] in ("throttled", "unjudged")}


def test_a_sustained_power_cap_at_692_w_is_throttled() -> None:
    samples = phase("sustained")
    state = monitored(samples)
    near = [s for s in samples if s["reasons"] & 4 and s["power_mw"] >= 0.9 * s["limit_mw"]]
    assert statistics.median(s["power_mw"] for s in samples) / 1000 == pytest.approx(692, abs=5)
    gpu = state["gpus"][0]
    assert gpu["reasons_backed"]["sw_power_cap"] == pytest.approx(len(near) / 1500, abs=1e-4)
    assert ("throttled", "sw_power_cap") in _flags(state)
    assert ("throttled", "low_clock") in _flags(state)  # the median clock rule is unchanged
    cap = next(f for f in evaluate(state, Rules()) if f["reason"] == "sw_power_cap")
    assert f"{len(near) / 1500:.1%}" in cap["detail"] and "of 700 W" in cap["detail"]


def test_the_share_and_sample_thresholds_are_settings() -> None:
    # The sustained readings with the cap reason on only the last 50 of 1500 (3.3 %).
    samples = [{**s, "reasons": 4 if i >= 1450 else 0} for i, s in enumerate(phase("sustained"))]
    state = monitored(samples)
    capped = ("throttled", "sw_power_cap")
    assert capped not in _flags(state, Rules(min_share=0.1))
    assert capped in _flags(state, Rules(min_share=0.03))
    short = monitored(phase("sustained")[1000:1008])  # 8 samples at the cap
    assert capped in _flags(short, Rules(min_samples=5))
    assert ("unjudged", "few_samples") in _flags(short, Rules(min_samples=10))


def test_thermal_reasons_need_the_temperature() -> None:
    cool = [{**s, "reasons": 0x20} for s in phase("sustained")]  # sw_thermal, at <= 70 C
    assert max(s["temp"] for s in cool) < 89 - 10
    hot = [{**s, "temp": 86} for s in cool]
    assert ("throttled", "sw_thermal") not in _flags(monitored(cool))
    assert ("throttled", "sw_thermal") in _flags(monitored(hot))


def test_a_context_holder_is_present_not_contended() -> None:
    state = monitored(phase("idle0", pids=["self", 1]))  # holds a context, runs nothing
    flags = evaluate(state, Rules())
    assert "contended" not in {f["flag"] for f in flags}
    (present,) = [f for f in flags if f["flag"] == "other_process_present"]
    assert present["reason"] == "idle_holder" and "pid 1" in present["detail"]
    assert state["gpus"][0]["process_util"] is True


def test_a_busy_contender_is_contended() -> None:
    samples = phase("idle0", pids=["self", 1])
    samples[10] = {**samples[10], "use": {1: 85}}  # used the GPU in one interval
    flags = evaluate(monitored(samples), Rules())
    (contended,) = [f for f in flags if f["flag"] == "contended"]
    assert "1 (85%)" in contended["detail"]
    assert "other_process_present" not in {f["flag"] for f in flags}


def test_without_per_process_utilisation_presence_counts_as_use() -> None:
    state = monitored(phase("idle0", pids=["self", 1]), process_util=False)
    assert state["gpus"][0]["process_util"] is False
    (contended,) = [f for f in evaluate(state, Rules()) if f["flag"] == "contended"]
    assert "no per-process utilisation" in contended["detail"]

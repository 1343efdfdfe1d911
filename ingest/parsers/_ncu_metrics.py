"""Nsight Compute numbers: values with locale separators and per-row units, and the roofline
arithmetic of ncu's own ``SpeedOfLight_*RooflineChart`` sections (FORMATS.md §3.4-3.5).

All metric values are converted to base units (bytes, seconds in rates, Hz, instructions),
except times, which are nanoseconds. FLOP counts use the standard roofline weights:
fp32 = fadd + fmul + 2·ffma, fp64 = dadd + dmul + 2·dfma, fp16 = 2·hadd + 2·hmul + 4·hfma
(half instructions work on pairs), tensor = the sum of ``sm__ops_path_tensor_src_*``
floating-point paths (ncu counts one multiply-add as two operations, so a bf16 4096³ GEMM is
2·4096³ = 137.4 GFLOP). Counts come from the ``.sum`` metric when present, else from the
``.sum.per_cycle_elapsed`` rate times the elapsed cycles, as the sections compute them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

Metrics = Mapping[str, float]

_COMMA_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$")
_DOT_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(\.\d{3}){2,}(,\d+)?$|^[-+]?\d{1,3}(\.\d{3})+,\d+$")
_DECIMAL_COMMA = re.compile(r"^[-+]?\d+,\d+$")
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_S = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
           "ms": 1e-3, "second": 1.0, "s": 1.0}  # fmt: skip
_UNIT_WORD = re.compile(r"^[A-Za-z%]+$")
_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
_SMSP_OPS = {"fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
             "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
             "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4))}  # fmt: skip
# Floating-point tensor paths; Hopper+ names first, pre-Hopper aggregates as the fallback.
_TENSOR_PATHS = (
    ("fp64", "tf32_dst_fp32", "bf16_dst_fp32", "fp16", "fp8_sparsity_off", "fp8_sparsity_on",
     "fp4_dst_fp32", "fp4_fp6_dst_fp16", "fp4_fp6_dst_fp32", "fp4_fp6_fp8_dst_fp16",
     "fp4_fp6_fp8_dst_fp32"),
    ("fp16_bf16_tf32_dst_fp32", "fp16_dst_fp16", "fp64"),
)  # fmt: skip
# Dense (no sparsity) tensor peaks, bf16/fp16 to fp32, first found wins.
_TENSOR_PEAKS = (
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
    "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum.peak_sustained",
)
_SASS = "sass_thread_inst_executed_op_{}_pred_on"


def number(text: str) -> float | None:
    """Parse an ncu value: thousands separators of either locale; None for n/a or text.

    A single ``.`` group is read as a decimal point (ncu's C-locale output).

    >>> number("2,000,000,000"), number("1,215,000,000.00"), number("27.595.520")
    (2000000000.0, 1215000000.0, 27595520.0)
    >>> number("1.234,5"), number("3,5"), number("174.75"), number("n/a"), number("")
    (1234.5, 3.5, 174.75, None, None)
    """
    text = text.strip()
    if _COMMA_THOUSANDS.match(text):
        text = text.replace(",", "")
    elif _DOT_THOUSANDS.match(text):
        text = text.replace(".", "").replace(",", ".")
    elif _DECIMAL_COMMA.match(text):
        text = text.replace(",", ".")
    try:
        return float(text)
    except ValueError:
        return None


def unit_factor(unit: str) -> float | None:
    """Factor from ``unit`` to perfdash's base: ns for times, SI base for everything else.

    Returns None for a unit it does not know (the value is then kept unscaled).

    >>> unit_factor("usecond"), unit_factor("Mbyte"), unit_factor("Gbyte/second")
    (1000.0, 1000000.0, 1000000000.0)
    >>> unit_factor("Ghz"), unit_factor("%"), unit_factor("inst/cycle"), unit_factor("")
    (1000000000.0, 1.0, 1.0, 1.0)
    """
    unit = unit.strip()
    if unit in _TIME_S:
        return _TIME_S[unit] * 1e9
    if unit.lower() in _HZ:
        return _HZ[unit.lower()]
    num, _, den = unit.partition("/")
    top = _scale(num)
    bottom = _scale(den) if den else 1.0
    if top is None or bottom is None:
        return None
    return top / bottom


def unit_kind(unit: str) -> str:
    """``"%"``, ``"time"``, ``"rate"`` (per second, or a frequency) or ``"other"``.

    >>> unit_kind("usecond"), unit_kind("Gbyte/second"), unit_kind("Ghz"), unit_kind("inst")
    ('time', 'rate', 'rate', 'other')
    """
    if unit == "%":
        return "%"
    if unit in _TIME_S:
        return "time"
    den = unit.partition("/")[2]
    return "rate" if den in _TIME_S or unit.lower() in _HZ else "other"


def _scale(part: str) -> float | None:
    if part in _TIME_S:
        return _TIME_S[part]
    if part in ("", "%"):
        return 1.0
    if len(part) > 1 and part[0] in _PREFIX and part[0].isupper() and part[1].islower():
        return _PREFIX[part[0]]
    return 1.0 if _UNIT_WORD.match(part) else None


def launch_args(m: Metrics) -> dict[str, float]:
    """The roofline point and launch facts of one kernel launch, under perfdash's arg keys.

    Keys are present only when the CSV had what they need: ``duration_ns``, ``flops_fp64``,
    ``flops_fp32``, ``flops_fp16``, ``flops_tensor``, ``dram_bytes``, ``l1_bytes``,
    ``l2_bytes``, ``achieved_occupancy``, ``sm_throughput_pct``, ``mem_throughput_pct``.
    """
    out: dict[str, float] = {}
    dur_ns = _first(m, "gpu__time_duration.sum", "gpu__time_duration.avg")
    if dur_ns is not None:
        out["duration_ns"] = dur_ns
    for precision, ops in _SMSP_OPS.items():
        counts = [(_sass_count(m, op, dur_ns), weight) for op, weight in ops]
        if any(c is not None for c, _ in counts):
            out[f"flops_{precision}"] = sum((c or 0.0) * w for c, w in counts)
    tensor = _tensor_ops(m, dur_ns)
    if tensor is not None:
        out["flops_tensor"] = tensor
    for key, value in (
        ("dram_bytes", _dram_bytes(m, dur_ns)),
        ("l2_bytes", _l2_bytes(m, dur_ns)),
        ("l1_bytes", _l1_bytes(m, dur_ns)),
        ("achieved_occupancy", m.get("sm__warps_active.avg.pct_of_peak_sustained_active")),
        ("sm_throughput_pct", m.get("sm__throughput.avg.pct_of_peak_sustained_elapsed")),
        (
            "mem_throughput_pct",
            m.get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        ),
    ):
        if value is not None:
            out[key] = value
    return out


def device_peaks(m: Metrics) -> dict[str, float]:
    """Peak FLOP/s and DRAM bytes/s as ncu's roofline charts draw them for this launch:
    peak per cycle x the clock measured during the launch."""
    out: dict[str, float] = {}
    sm_hz = m.get("sm__cycles_elapsed.avg.per_second")
    if sm_hz:
        for key, op, weight in (("fp32", "ffma", 2), ("fp64", "dfma", 2), ("fp16", "hfma", 4)):
            per_cycle = m.get(f"sm__{_SASS.format(op)}.sum.peak_sustained")
            if per_cycle is not None:
                out[f"peak_flops_{key}"] = per_cycle * weight * sm_hz
        tensor = _first(m, *_TENSOR_PEAKS)
        if tensor is not None:
            out["peak_flops_tensor"] = tensor * sm_hz
    dram = m.get("dram__bytes.sum.peak_sustained")
    dram_hz = m.get("dram__cycles_elapsed.avg.per_second")
    if dram is not None and dram_hz:
        out["peak_dram_bytes_per_s"] = dram * dram_hz
    return out


# FLOP per SM per clock by compute capability, for pages that omit ncu's `.peak_sustained`
# metrics (details, summary): the `.peak_sustained` values of a raw page of an H200
# (tests/data/ncu/gemm_elementwise_raw.csv) divided by its 132 SMs, times the FLOP per
# instruction (2 per fma, 4 per half2 fma): ffma 128, dfma 64, hfma 128, bf16 tensor 4096.
PER_SM_CLOCK: dict[str, dict[str, float]] = {
    "9.0": {"fp32": 256.0, "fp64": 128.0, "fp16": 512.0, "tensor": 4096.0},
}
MIN_DRAM_PCT = 1.0  # below this, a 2-decimal % gives too rough a peak bandwidth


def derived_peaks(m: Metrics, compute_capability: str) -> dict[str, float]:
    """Peaks for a launch whose page lacks ncu's peak metrics (details, summary).

    FLOP/s: SM count x the SM clock during the launch x the compute capability's FLOP per
    SM per clock (`PER_SM_CLOCK`; none for other capabilities). DRAM bytes/s: the bytes/s
    the launch achieved divided by its "DRAM Throughput" %, which ncu defines as the share
    of that very peak.

    >>> m = {"device__attribute_multiprocessor_count": 132.0,
    ...      "sm__cycles_elapsed.avg.per_second": 1.5e9, "dram__bytes.sum": 2e6,
    ...      "gpu__time_duration.sum": 1000.0,
    ...      "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 50.0}
    >>> derived_peaks(m, "9.0")["peak_flops_fp32"], round(derived_peaks(m, "7.0")[
    ...     "peak_dram_bytes_per_s"])
    (50688000000000.0, 4000000000000)
    """
    out: dict[str, float] = {}
    sms = m.get("device__attribute_multiprocessor_count")
    sm_hz = m.get("sm__cycles_elapsed.avg.per_second")
    rates = PER_SM_CLOCK.get(compute_capability.strip())
    if sms and sm_hz and rates:
        out.update({f"peak_flops_{k}": sms * sm_hz * per for k, per in rates.items()})
    pct = m.get("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
    rate = m.get("dram__bytes.sum.per_second")
    nbytes, dur = m.get("dram__bytes.sum"), m.get("gpu__time_duration.sum")
    if rate is None and nbytes is not None and dur:
        rate = nbytes / (dur * 1e-9)
    if pct is not None and pct >= MIN_DRAM_PCT and rate:
        out["peak_dram_bytes_per_s"] = rate / (pct / 100.0)
    return out


def _first(m: Metrics, *names: str) -> float | None:
    return next((m[n] for n in names if n in m), None)


def _cycles(m: Metrics, unit: str, dur_ns: float | None) -> float | None:
    """Elapsed cycles of `unit` (smsp or sm), from the count or from clock x duration."""
    cycles = _first(m, f"{unit}__cycles_elapsed.avg", "sm__cycles_elapsed.avg")
    if cycles is not None:
        return cycles
    hz = _first(m, f"{unit}__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second")
    return hz * dur_ns * 1e-9 if hz is not None and dur_ns is not None else None


def _sass_count(m: Metrics, op: str, dur_ns: float | None) -> float | None:
    name = _SASS.format(op)
    count = _first(m, f"sm__{name}.sum", f"smsp__{name}.sum")
    if count is not None:
        return count
    rate = m.get(f"smsp__{name}.sum.per_cycle_elapsed")
    cycles = _cycles(m, "smsp", dur_ns) if rate is not None else None
    return rate * cycles if rate is not None and cycles is not None else None


def _tensor_ops(m: Metrics, dur_ns: float | None) -> float | None:
    for paths in _TENSOR_PATHS:
        total, seen = 0.0, False
        for path in paths:
            name = f"sm__ops_path_tensor_src_{path}"
            count = m.get(f"{name}.sum")
            if count is None and f"{name}.sum.per_cycle_elapsed" in m:
                cycles = _cycles(m, "sm", dur_ns)
                count = m[f"{name}.sum.per_cycle_elapsed"] * cycles if cycles else None
            if count is not None:
                total, seen = total + count, True
        if seen:
            return total
    return None


def _per_launch(m: Metrics, rate_name: str, dur_ns: float | None) -> float | None:
    rate = m.get(rate_name)
    return rate * dur_ns * 1e-9 if rate is not None and dur_ns is not None else None


def _dram_bytes(m: Metrics, dur_ns: float | None) -> float | None:
    total = m.get("dram__bytes.sum")
    if total is None and "dram__bytes_read.sum" in m and "dram__bytes_write.sum" in m:
        total = m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
    return total if total is not None else _per_launch(m, "dram__bytes.sum.per_second", dur_ns)


def _l2_bytes(m: Metrics, dur_ns: float | None) -> float | None:
    """L2 <-> L1 traffic as the hierarchical roofline measures it (lts2xbar x 32 B)."""
    if "lts__lts2xbar_cycles_active.sum" in m:
        return m["lts__lts2xbar_cycles_active.sum"] * 32
    derived = _per_launch(m, "derived__lts__lts2xbar_bytes.sum.per_second", dur_ns)
    if derived is None:
        cycles = _per_launch(m, "lts__lts2xbar_cycles_active.sum.per_second", dur_ns)
        derived = cycles * 32 if cycles is not None else None
    return derived if derived is not None else m.get("lts__t_bytes.sum")


def _l1_bytes(m: Metrics, dur_ns: float | None) -> float | None:
    """L1 writeback traffic as the hierarchical roofline measures it (x 128 B)."""
    for scope in ("lgds", "lg"):
        if f"l1tex__lsu_writeback_active_mem_{scope}.sum" in m:
            return m[f"l1tex__lsu_writeback_active_mem_{scope}.sum"] * 128
        derived = _per_launch(
            m, f"derived__l1tex__lsu_writeback_bytes_mem_{scope}.sum.per_second", dur_ns
        )
        if derived is not None:
            return derived
    return m.get("l1tex__t_bytes.sum")

"""rocprof-compute (Omniperf) workloads: measured roofline points and empirical peaks.

Per-dispatch FLOPs and DRAM bytes follow rocprof-compute's own ``roofline_calc.calc_ai``
(FORMATS.md §4.5): VALU counters count wave instructions (x64 lanes, FMA = 2), MFMA "MOPS" count
units of 512 operations, and HBM bytes come from the TCC EA request counters (MI200 and MI300
spellings). They land in kernel args under the same keys the Nsight Compute parser uses
(``flops_fp64``/``flops_fp32``/``flops_fp16``/``flops_tensor``/``dram_bytes``); ``roofline.csv``'s
micro-benchmark peaks (GB/s, GFLOP/s) become ``peak_*`` device properties in bytes/s and FLOP/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.parsers.rocprof._common import Devices
from ingest.parsers.rocprof._csv import CsvTable

Counters = Mapping[str, float]
_GIGA = 1e9
# device property -> roofline.csv column (GB/s or GFLOP/s)
PEAK_COLUMNS = {
    "peak_dram_bytes_per_s": "HBMBw",
    "peak_l2_bytes_per_s": "L2Bw",
    "peak_l1_bytes_per_s": "L1Bw",
    "peak_lds_bytes_per_s": "LDSBw",
    "peak_flops_fp64": "FP64Flops",
    "peak_flops_fp32": "FP32Flops",
    "peak_flops_fp16": "FP16Flops",
    "peak_flops_tensor": "MFMAF16Flops",
    "peak_flops_tensor_bf16": "MFMABF16Flops",
    "peak_flops_tensor_fp32": "MFMAF32Flops",
    "peak_flops_tensor_fp64": "MFMAF64Flops",
}
SYSINFO_KEYS = {
    "gpu_arch": "arch",
    "cu_per_gpu": "compute_units",
    "simd_per_cu": "simd_per_cu",
    "max_sclk": "max_clock_mhz",
    "max_mclk": "max_memory_clock_mhz",
    "wave_size": "wave_size",
    "num_xcd": "num_xcd",
    "total_l2_chan": "l2_channels",
    "rocm_version": "rocm_version",
}


def _first(counters: Counters, *names: str) -> float | None:
    return next((counters[n] for n in names if n in counters), None)


def _valu_flops(counters: Counters, precision: str) -> float | None:
    ops = [_first(counters, f"SQ_INSTS_VALU_{op}_{precision}") for op in ("ADD", "MUL", "FMA")]
    if any(v is None for v in ops):
        return None
    add, mul, fma = (v or 0.0 for v in ops)
    trans = _first(counters, f"SQ_INSTS_VALU_TRANS_{precision}") or 0.0
    return 64 * (add + mul + 2 * fma + trans)


def _dram_bytes(c: Counters) -> float | None:
    rd = _first(c, "TCC_EA0_RDREQ_sum", "TCC_EA_RDREQ_sum")
    rd32 = _first(c, "TCC_EA0_RDREQ_32B_sum", "TCC_EA_RDREQ_32B_sum")
    wr = _first(c, "TCC_EA0_WRREQ_sum", "TCC_EA_WRREQ_sum")
    wr64 = _first(c, "TCC_EA0_WRREQ_64B_sum", "TCC_EA_WRREQ_64B_sum")
    if rd is None or rd32 is None or wr is None or wr64 is None:
        return None
    bubble = _first(c, "TCC_BUBBLE_sum")
    if bubble is not None:  # MI300: 128-byte reads counted as bubbles
        return 128 * bubble + 32 * rd32 + 64 * (rd - bubble - rd32) + 32 * (wr - wr64) + 64 * wr64
    return 32 * rd32 + 64 * (rd - rd32) + 64 * wr64 + 32 * (wr - wr64)


def roofline_args(counters: Counters) -> dict[str, Any]:
    """Measured roofline quantities of one dispatch, for the counters present.

    >>> roofline_args({"SQ_INSTS_VALU_ADD_F32": 1, "SQ_INSTS_VALU_MUL_F32": 0,
    ...                "SQ_INSTS_VALU_FMA_F32": 2})
    {'flops_fp32': 320}
    """
    out: dict[str, Any] = {}
    for precision, key in (("F64", "flops_fp64"), ("F32", "flops_fp32"), ("F16", "flops_fp16")):
        flops = _valu_flops(counters, precision)
        if flops is not None:
            out[key] = flops
    mfma = [_first(counters, f"SQ_INSTS_VALU_MFMA_MOPS_{p}") for p in ("F16", "BF16", "F32", "F64")]
    if any(v is not None for v in mfma):
        out["flops_tensor"] = 512 * sum(v or 0.0 for v in mfma)
    dram = _dram_bytes(counters)
    if dram is not None:
        out["dram_bytes"] = dram
    l2 = [
        _first(counters, n)
        for n in (
            "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum",
            "TCP_TCC_ATOMIC_WITH_RET_REQ_sum", "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum",
        )
    ]  # fmt: skip
    if all(v is not None for v in l2):
        out["l2_bytes"] = 64 * sum(v or 0.0 for v in l2)
    return {k: int(v) if float(v).is_integer() else v for k, v in out.items()}


def read_roofline(table: CsvTable, devices: Devices) -> None:
    """Empirical peaks per device (``device``/``devID`` column), converted to base units."""
    for row in table.rows():
        index = row.opt_int("device") if row.has("device") else row.opt_int("devID")
        props: dict[str, Any] = {}
        for key, column in PEAK_COLUMNS.items():
            value = row.opt_float(column) if row.has(column) else None
            if value is not None:
                props[key] = value * _GIGA
        props["peaks_source"] = "rocprof-compute roofline.csv (measured)"
        devices.see(index or 0, **props)


def read_sysinfo(table: CsvTable) -> dict[str, Any]:
    """GPU facts of the workload's machine (first row), as device properties."""
    for row in table.rows():
        props: dict[str, Any] = {"vendor": "AMD", "model": row.text("gpu_model")}
        for column, key in SYSINFO_KEYS.items():
            if row.has(column):
                number = row.opt_float(column) if _numeric(row.text(column)) else None
                props[key] = (
                    (int(number) if number.is_integer() else number)
                    if number is not None
                    else row.text(column)
                )
        return props
    return {}


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True

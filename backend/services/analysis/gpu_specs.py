"""Peak FLOP/s per precision and DRAM bandwidth of common GPUs, for rooflines of traces
that carry no measured peaks (torch.profiler and rocprofv3 traces report neither clocks
nor bandwidth; FORMATS.md §1.10).

Numbers are the vendors' dense (no structured sparsity) datasheet peaks, in FLOP/s and
bytes/s, each with the page it was read from. AMD's MI250/MI250X are two GCDs per package
and each GCD is one device to the runtime, so their entries are per GCD (half the package).

Public surface: `GpuSpec`, `SPECS`, `lookup_spec`.
"""

from dataclasses import dataclass, field

T = 1e12


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model's datasheet peaks.

    `peak_flops` keys are precisions: `fp64`, `fp64_tensor`, `fp32`, `tf32_tensor`,
    `fp16_tensor` (also bf16), `fp8_tensor`.
    """

    key: str
    name: str
    peak_flops: dict[str, float]
    peak_dram_bytes_per_s: float
    source: str
    match: tuple[str, ...] = field(default=())
    sm_count: int | None = None


SPECS: tuple[GpuSpec, ...] = (
    GpuSpec(
        key="h200",
        name="NVIDIA H200 SXM",
        peak_flops={"fp64": 34 * T, "fp64_tensor": 67 * T, "fp32": 67 * T,
                    "tf32_tensor": 494.5 * T, "fp16_tensor": 989.5 * T, "fp8_tensor": 1979 * T},
        peak_dram_bytes_per_s=4.8e12,
        source="https://www.nvidia.com/en-us/data-center/h200/",
        match=("h200",),
    ),
    GpuSpec(
        key="h100_sxm",
        name="NVIDIA H100 SXM5",
        peak_flops={"fp64": 34 * T, "fp64_tensor": 67 * T, "fp32": 67 * T,
                    "tf32_tensor": 494.7 * T, "fp16_tensor": 989.4 * T, "fp8_tensor": 1978.9 * T},
        peak_dram_bytes_per_s=3.35e12,
        source="https://www.nvidia.com/en-us/data-center/h100/",
        match=("h100",),
    ),
    GpuSpec(
        key="a100_sxm_80gb",
        name="NVIDIA A100 SXM 80GB",
        peak_flops={"fp64": 9.7 * T, "fp64_tensor": 19.5 * T, "fp32": 19.5 * T,
                    "tf32_tensor": 156 * T, "fp16_tensor": 312 * T},
        peak_dram_bytes_per_s=2.039e12,
        source="https://www.nvidia.com/en-us/data-center/a100/",
        match=("a100",),
    ),
    GpuSpec(
        key="l40s",
        name="NVIDIA L40S",
        peak_flops={"fp32": 91.6 * T, "tf32_tensor": 183 * T, "fp16_tensor": 362.05 * T,
                    "fp8_tensor": 733 * T},
        peak_dram_bytes_per_s=864e9,
        source="https://www.nvidia.com/en-us/data-center/l40s/",
        match=("l40s",),
    ),
    GpuSpec(
        key="mi300x",
        name="AMD Instinct MI300X",
        peak_flops={"fp64": 81.7 * T, "fp64_tensor": 163.4 * T, "fp32": 163.4 * T,
                    "tf32_tensor": 653.7 * T, "fp16_tensor": 1307.4 * T,
                    "fp8_tensor": 2614.9 * T},
        peak_dram_bytes_per_s=5.3e12,
        source="https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        match=("mi300x",),
        sm_count=304,
    ),
    GpuSpec(
        key="mi250x_gcd",
        name="AMD Instinct MI250X (one GCD)",
        peak_flops={"fp64": 47.9 / 2 * T, "fp64_tensor": 95.7 / 2 * T, "fp32": 47.9 / 2 * T,
                    "fp16_tensor": 383 / 2 * T},
        peak_dram_bytes_per_s=3.2768e12 / 2,
        source="https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html",
        match=("mi250x",),
        sm_count=110,
    ),
    GpuSpec(
        key="mi250_gcd",
        name="AMD Instinct MI250 (one GCD)",
        peak_flops={"fp64": 45.3 / 2 * T, "fp64_tensor": 90.5 / 2 * T, "fp32": 45.3 / 2 * T,
                    "fp16_tensor": 362.1 / 2 * T},
        peak_dram_bytes_per_s=3.2768e12 / 2,
        source="https://www.amd.com/en/products/accelerators/instinct/mi200/mi250.html",
        match=("mi250",),
        sm_count=104,
    ),
)  # fmt: skip


def lookup_spec(name: str, sm_count: int | None = None) -> GpuSpec | None:
    """The spec whose name pattern appears in a device name, else one matched by SM/CU count.

    ROCm builds of torch report `AMD Radeon Graphics` for every Instinct part, so for AMD
    the compute-unit count (`numSms`) is the only usable key (FORMATS.md §1.10).

    >>> lookup_spec("NVIDIA H200").key
    'h200'
    >>> lookup_spec("NVIDIA H100 80GB HBM3").key
    'h100_sxm'
    >>> lookup_spec("AMD Radeon Graphics", 104).key
    'mi250_gcd'
    >>> lookup_spec("Tesla T4") is None
    True
    """
    lowered = name.lower().replace(" ", "")
    for spec in SPECS:
        if any(m in lowered for m in spec.match):
            return spec
    if sm_count is not None and ("amd" in lowered or "radeon" in lowered or not lowered):
        return next((s for s in SPECS if s.sm_count == sm_count), None)
    return None

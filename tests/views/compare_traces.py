"""An eager and an optimised run of one workload, as Kineto JSON, for the compare tests.

Every step launches each kernel once from its CPU op (`cpu_op` > `cudaLaunchKernel` >
kernel, tied by correlation id), one after another on one stream. The optimised run is
faster, renames kernels (other template arguments, a fused kernel under the same op),
drops some and adds others, so each matching pass has something to match.
"""

from __future__ import annotations

from typing import Any

from tests.views.kineto_builder import cpu_op, document, kernel, launch, step

GEMM_A = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_128x128_64x3>(Params)"
GEMM_B = "void cutlass::Kernel2<cutlass_90_tensorop_bf16_s16816gemm_256x128_64x4>(Params)"
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
SOFTMAX_A = (
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false>(float*)"
)
SOFTMAX_B = (
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 11, true>(float*)"
)
MEAN = "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, MeanOps> >(ReduceOp)"
MAX = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MaxOps> >(ReduceOp)"

# (launching op or None, kernel, duration in µs) of one step
EAGER: list[tuple[str | None, str, float]] = [
    ("aten::mm", GEMM_A, 3000),
    ("aten::add", ADD, 500),
    ("aten::softmax", SOFTMAX_A, 800),
    ("aten::relu", "relu_kernel_eager", 400),
    ("aten::dropout", "dropout_kernel", 300),
    (None, MEAN, 120),
    (None, MAX, 80),
]
FAST: list[tuple[str | None, str, float]] = [
    ("aten::mm", GEMM_B, 2000),
    ("aten::add", ADD, 500),
    ("aten::softmax", SOFTMAX_B, 600),
    ("aten::relu", "fused_relu_dropout_kernel", 200),
    ("aten::layer_norm", "new_norm_kernel", 100),
    (None, "new_scale_kernel", 50),
]
GAP_US = 20.0  # GPU idle between two kernels, and before the first of a step


def workload(
    plan: list[tuple[str | None, str, float]], steps: int, *, markers: bool = True
) -> bytes:
    """`steps` steps of `plan`; `markers=False` leaves out the ProfilerStep annotations."""
    events: list[dict[str, Any]] = []
    step_us = sum(d for _, _, d in plan) + GAP_US * (len(plan) + 1)
    corr = 0
    for n in range(steps):
        start = n * step_us
        if markers:
            events.append(step(n + 1, start, step_us))
        gpu = start + GAP_US
        for i, (op, name, dur) in enumerate(plan):
            corr += 1
            cpu = start + 1 + i * 2
            if op is not None:
                events.append(cpu_op(op, cpu, 1.5, corr))
            events += [launch(cpu + 0.5, 0.5, corr), kernel(name, gpu, dur, ext=corr)]
            gpu += dur + GAP_US
    return document(events)

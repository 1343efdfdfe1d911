"""Write perfdash's bundled sample trace: a *synthetic* torch.profiler (Kineto) trace.

The trace imitates rank 0 of an 8-GPU data-parallel (DDP) training job on one NVIDIA H200:
twelve ``ProfilerStep#N`` iterations of a small bf16 transformer (4 layers, d_model 1024,
sequence 1024, micro-batch 8). Nothing here was measured; every duration comes from a
simple cost model plus seeded jitter, so the file is the same on every run.

Each step has a pinned host-to-device copy of the batch on a copy stream, the forward pass
(cuBLAS ``nvjet`` GEMMs, FlashAttention, layer norm, GELU, Triton kernels from a compiled
MLP), the backward pass on the autograd thread with DDP all-reduce buckets on the NCCL
stream overlapping it, gradient clipping, a fused AdamW step, and ``loss.item()`` (a 4-byte
device-to-host copy plus ``cudaStreamSynchronize``), after which the GPU idles while the CPU
prepares the next step. Every fourth step also does a copy from pageable memory.

The layout follows the current Kineto writer (FORMATS.md section 1): relative ``ts``/``dur``
in microseconds with three decimals, ``baseTimeNanoseconds``, CUPTI correlation ids shared
by runtime calls and device activities, ``ac2g`` flows, ``[memory]`` instants, metadata
events and the final ``Record Window End`` instant.

Usage: ``python tests/data/make_sample_trace.py [OUT]`` (stdlib only). Without OUT it
rewrites ``backend/sample_data/synthetic_train_8gpu_rank0.pt.trace.json.gz``, where
``perfdash serve`` seeds it from; the product never imports this script.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import struct
import sys
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20261129
OUTPUT_NAME = "synthetic_train_8gpu_rank0.pt.trace.json.gz"
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "backend" / "sample_data"

# ---------------------------------------------------------------------------------------
# Job shape
# ---------------------------------------------------------------------------------------
N_STEPS = 12
FIRST_STEP = 2  # schedule(wait=1, warmup=1, active=12): the first recorded step is #2
WORLD_SIZE = 8
RANK = 0
BATCH = 8
SEQ = 1024
TOKENS = BATCH * SEQ
D_MODEL = 1024
N_HEADS = 8
HEAD_DIM = D_MODEL // N_HEADS
D_FF = 4 * D_MODEL
N_LAYERS = 4
VOCAB = 16384
DDP_BUCKET_BYTES = 25 * 1024 * 1024
DDP_FIRST_BUCKET_BYTES = 1024 * 1024

# ---------------------------------------------------------------------------------------
# Process, threads, streams, clock
# ---------------------------------------------------------------------------------------
PID = 3817
MAIN_TID = 3817
AUTOGRAD_TID = 3904
COMPUTE_STREAM = 7
COPY_STREAM = 16
NCCL_STREAM = 24
DEVICE = 0
BASE_TIME_NS = 227 * 7_889_238 * 1_000_000_000  # Kineto's "quarter" bucket (FORMATS 1.3)
TRACE_START_NS = 3_901_547_112_418_000  # ~45 days into the bucket, like real traces
GPU_CLOCK_NS = 32  # Hopper's global timer ticks every 32 ns

H200_PROPERTIES: list[tuple[str, object]] = [
    ("name", "NVIDIA H200"),
    ("totalGlobalMem", 150109978624),
    ("computeMajor", 9),
    ("computeMinor", 0),
    ("maxThreadsPerBlock", 1024),
    ("maxThreadsPerMultiprocessor", 2048),
    ("regsPerBlock", 65536),
    ("warpSize", 32),
    ("sharedMemPerBlock", 49152),
    ("numSms", 132),
    ("regsPerMultiprocessor", 65536),
    ("sharedMemPerBlockOptin", 232448),
    ("sharedMemPerMultiprocessor", 233472),
]
NUM_SMS = 132
MAX_WARPS_PER_SM = 64
REGS_PER_SM = 65536
SMEM_PER_SM = 233472
MAX_BLOCKS_PER_SM = 32

# CUPTI callback ids (cbid) of the API calls that appear in the trace.
CBID = {
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131,
    "cudaEventRecord": 135,
    "cudaStreamWaitEvent": 147,
    "cudaLaunchKernel": 211,
    "cudaStreamIsCapturing": 317,
    "cudaLaunchKernelExC": 430,
    "cuLaunchKernel": 307,
    "cuLaunchKernelEx": 652,
}
DRIVER_APIS = frozenset({"cuLaunchKernel", "cuLaunchKernelEx"})

# ---------------------------------------------------------------------------------------
# Kernel names (demangled, as CUPTI reports them)
# ---------------------------------------------------------------------------------------
_ANON = "at::native::(anonymous namespace)::"
_BF16 = "c10::BFloat16"
_RED_SUM = (
    f"at::native::ReduceOp<{_BF16}, at::native::func_wrapper_t<{_BF16}, "
    f"at::native::sum_functor<{_BF16}, float, {_BF16}>::operator()(at::TensorIterator&)"
    f"::{{lambda(float, float)#1}}>, unsigned int, {_BF16}, 4, 4>"
)
_GELU_F = (
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
    "::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const"
    f"::{{lambda({_BF16})#1}}"
)
_FA_FWD_TRAITS = (
    "Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >"
)
_FA_BWD_TRAITS = (
    "Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >"
)
_MTA = f"void {_ANON}multi_tensor_apply_kernel"
_LPNORM = f"{_ANON}LpNormFunctor<{_BF16}, ({_ANON}NormType)1, float, float>"
_FOREACH_MUL = f"{_ANON}BinaryOpScalarTensorFunctor<{_BF16}, 1, 1, 0>"
_ADAMW = f"{_ANON}FusedAdamMathFunctor<{_BF16}, 4, (at::native::ADAM_MODE)1, false>"
_ADAMW_ARGS = "double*, double, double, double, double, double, bool, float*, float*"

K_EMBED = (
    f"void {_ANON}indexSelectLargeIndex<{_BF16}, long, unsigned int, 2, 2, -2, true>"
    f"(at::cuda::detail::TensorInfo<{_BF16}, unsigned int>, at::cuda::detail::TensorInfo<{_BF16}, "
    "unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, "
    "unsigned int, unsigned int, long)"
)
K_LAYER_NORM = (
    f"void {_ANON}vectorized_layer_norm_kernel<{_BF16}, float, false>(int, float, {_BF16} const*, "
    f"{_BF16} const*, {_BF16} const*, float*, float*, {_BF16}*)"
)
K_LAYER_NORM_BWD_INPUT = (
    f"void {_ANON}layer_norm_grad_input_kernel_vectorized<{_BF16}, float>({_BF16} const*, "
    f"{_BF16} const*, float const*, float const*, {_BF16} const*, {_BF16}*, int)"
)
K_LAYER_NORM_BWD_GAMMA = (
    f"void {_ANON}GammaBetaBackwardCUDAKernelTemplate<{_BF16}, float, 32u, 32u, 256u, false, "
    f"true, false>(long, long, {_BF16} const*, {_BF16} const*, float const*, float const*, "
    f"{_BF16}*, {_BF16}*)"
)
K_ADD = (
    f"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<{_BF16}>, "
    f"std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<{_BF16}>, std::array<char*, 3ul>)"
)
K_GELU = (
    f"void at::native::vectorized_elementwise_kernel<4, {_GELU_F}, std::array<char*, 2ul> >"
    f"(int, {_GELU_F}, std::array<char*, 2ul>)"
)
K_GELU_BWD = K_GELU.replace("GeluCUDAKernelImpl", "GeluBackwardCUDAKernelImpl").replace(
    f"lambda({_BF16})#1", f"lambda({_BF16}, {_BF16})#1"
)
K_SUM = f"void at::native::reduce_kernel<512, 1, {_RED_SUM} >({_RED_SUM})"
K_FLASH_FWD = (
    f"void pytorch_flash::flash_fwd_kernel<{_FA_FWD_TRAITS}, false, true, false, false, true, "
    "true, false, false>(pytorch_flash::Flash_fwd_params)"
)
K_FLASH_BWD_DOT = (
    f"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, {_FA_BWD_TRAITS} >"
    "(pytorch_flash::Flash_bwd_params)"
)
K_FLASH_BWD = (
    f"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{_FA_BWD_TRAITS}, false, "
    "true, false, false, true, true, false>(pytorch_flash::Flash_bwd_params)"
)
K_FLASH_BWD_DQ = (
    f"void pytorch_flash::flash_bwd_convert_dq_kernel<{_FA_BWD_TRAITS} >"
    "(pytorch_flash::Flash_bwd_params, int)"
)
K_LOG_SOFTMAX = (
    f"void {_ANON}cunn_SoftMaxForward<4, {_BF16}, float, float, "
    f"{_ANON}LogSoftMaxForwardEpilogue>(float*, {_BF16} const*, int)"
)
K_LOG_SOFTMAX_BWD = (
    f"void {_ANON}cunn_SoftMaxBackward<4, {_BF16}, float, float, "
    f"{_ANON}LogSoftMaxBackwardEpilogue>({_BF16}*, float const*, float const*, long)"
)
K_NLL = (
    f"void {_ANON}nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, "
    "float const*, long const*, float const*, bool, long, long, long, long)"
)
K_NLL_BWD = (
    f"void {_ANON}nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, "
    "long const*, float const*, float const*, bool, int, int, long, long)"
)
K_FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
K_RADIX_SORT = (
    "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::"
    "DeviceRadixSortPolicy<long, long, unsigned int>::Policy900, false, long, long, unsigned "
    "int, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, unsigned "
    "int*, unsigned int const*, long*, long const*, long*, long const*, int, int, int, "
    "at_cuda_detail::cub::detail::identity_decomposer_t)"
)
K_GRAD_WEIGHT = (
    f"void {_ANON}compute_grad_weight<{_BF16}, long>(long const*, {_BF16} const*, long const*, "
    f"long, long, long const*, long const*, at::AccumulateType<{_BF16}, true>::type*, long)"
)
K_SUM_SCATTER = (
    f"void {_ANON}sum_and_scatter<{_BF16}, long>(long const*, {_BF16}*, long, long const*, "
    f"long const*, at::AccumulateType<{_BF16}, true>::type const*, long const*, long, long, long)"
)
K_LPNORM = (
    f"{_MTA}<{_ANON}TensorListMetadata<1>, {_LPNORM}, float*, int>"
    f"({_ANON}TensorListMetadata<1>, {_LPNORM}, float*, int)"
)
K_LPNORM_CLEANUP = (
    f"void {_ANON}lpnorm_cleanup<{_BF16}, ({_ANON}NormType)1, float, float>(float const*, "
    f"{_ANON}TensorListAddresses, int)"
)
K_NORM = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps"
    "<float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
    "at::native::NormTwoOps<float, float, float>, unsigned int, float, 4, 4>)"
)
K_FOREACH_MUL = (
    f"{_MTA}<{_ANON}TensorListMetadata<1>, {_FOREACH_MUL}, std::multiplies<float>, float*>"
    f"({_ANON}TensorListMetadata<1>, {_FOREACH_MUL}, std::multiplies<float>, float*)"
)
K_ADAMW = (
    f"{_MTA}<{_ANON}FusedOptimizerTensorListMetadata<4>, {_ADAMW}, {_ADAMW_ARGS}>"
    f"({_ANON}FusedOptimizerTensorListMetadata<4>, {_ADAMW}, {_ADAMW_ARGS})"
)
K_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


@dataclass(frozen=True, slots=True)
class Gemm:
    """A cuBLAS nvjet kernel family: tile shape, layout suffix and resources."""

    name: str
    tile_m: int
    tile_n: int
    smem: int


GEMM_FWD = Gemm("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 256, 128, 213_504)
GEMM_FWD_NARROW = Gemm("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT", 128, 128, 213_248)
GEMM_DGRAD = Gemm("nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_NTN", 256, 128, 213_504)
GEMM_WGRAD = Gemm("nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopB_TNT", 128, 256, 213_504)


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel launch configuration, as Kineto reports it."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int
    smem: int
    cluster: bool = False  # cluster launches get "est. achieved occupancy %" 0 in Kineto


@dataclass(slots=True)
class Annotation:
    """A record_function range whose device work Kineto mirrors as gpu_user_annotation."""

    name: str
    ext: int
    spans: dict[int, list[int]] = field(default_factory=dict)  # stream -> [start, end]


@dataclass(frozen=True, slots=True)
class Block:
    """A live CUDA caching-allocator block."""

    addr: int
    size: int


# ---------------------------------------------------------------------------------------
# JSON formatting (Kineto's layout)
# ---------------------------------------------------------------------------------------
Arg = tuple[str, object]


def us(ns: int) -> str:
    """Format integer nanoseconds as Kineto does: microseconds with three decimals."""
    if ns < 0:
        raise ValueError(f"negative time {ns}")
    return f"{ns // 1000}.{ns % 1000:03d}"


def f32(value: float) -> float:
    """The shortest decimal that round-trips through float32 (Kineto stores these as float)."""
    packed = struct.pack("<f", value)
    single: float = struct.unpack("<f", packed)[0]
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return single


def jv(value: object) -> str:
    """One JSON value, with Kineto's ", " separators inside lists."""
    return json.dumps(value, separators=(", ", ": "))


def fmt_args(args: Sequence[Arg]) -> str:
    return ", ".join(f"{jv(k)}: {jv(v)}" for k, v in args)


def complete(
    cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: Sequence[Arg]
) -> str:
    head = (
        f'  {{\n    "ph": "X", "cat": "{cat}", "name": {jv(name)}, "pid": {pid}, "tid": {tid},\n'
        f'    "ts": {us(ts)}, "dur": {us(dur)}'
    )
    if not args:
        return head + "\n  }"
    return head + f',\n    "args": {{\n      {fmt_args(args)}\n    }}\n  }}'


def flow(phase: str, corr: int, pid: int, tid: int, ts: int) -> str:
    tail = ', "bp": "e"' if phase == "f" else ""
    return (
        f'  {{\n    "ph": "{phase}", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {us(ts)},\n'
        f'    "cat": "ac2g", "name": "ac2g"{tail}\n  }}'
    )


def metadata(name: str, pid: int | str, tid: int, ts: int, args: Sequence[Arg]) -> str:
    return (
        f'  {{\n    "name": "{name}", "ph": "M", "ts": {us(ts)}, "pid": {jv(pid)}, "tid": {tid},\n'
        f'    "args": {{\n      {fmt_args(args)}\n    }}\n  }}'
    )


# ---------------------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------------------


def occupancy(kernel: Kernel) -> tuple[float, float, int]:
    """Kineto's blocks per SM, warps per SM and est. achieved occupancy % for a launch."""
    blocks = kernel.grid[0] * kernel.grid[1] * kernel.grid[2]
    threads = kernel.block[0] * kernel.block[1] * kernel.block[2]
    warps = math.ceil(threads / 32)
    blocks_per_sm = f32(blocks / NUM_SMS)
    warps_per_sm = f32(blocks / NUM_SMS * warps)
    if kernel.cluster:
        return blocks_per_sm, warps_per_sm, 0
    regs_per_warp = math.ceil(kernel.regs * 32 / 256) * 256
    limits = [MAX_WARPS_PER_SM // warps, MAX_BLOCKS_PER_SM, REGS_PER_SM // (regs_per_warp * warps)]
    if kernel.smem:
        limits.append(SMEM_PER_SM // (kernel.smem + 1024))
    theoretical = min(limits) * warps / MAX_WARPS_PER_SM
    achieved = min(warps_per_sm / MAX_WARPS_PER_SM, theoretical)
    return blocks_per_sm, warps_per_sm, int(achieved * 100)


def gemm_ns(m: int, n: int, k: int) -> int:
    """bf16 GEMM time on an H200: ~650 TFLOP/s for large shapes, less for small ones."""
    flops = 2 * m * n * k
    efficiency = 650e12 * (1.0 - math.exp(-flops / 18e9))
    return int(flops / efficiency * 1e9) + 2500


def membound_ns(nbytes: int, bandwidth: float = 3.3e12) -> int:
    """A bandwidth-bound kernel: bytes over ~3.3 TB/s plus a fixed launch/tail cost."""
    return int(nbytes / bandwidth * 1e9) + 2200


def allreduce_ns(nelems: int) -> int:
    """Ring all-reduce of bf16 over 8 NVLink-connected H200s (~190 GB/s algorithm bandwidth)."""
    nbytes = 2 * nelems
    algbw = 190e9 * (1.0 - math.exp(-nbytes / 6e6))
    return int(nbytes / algbw * 1e9) + 14_000


def elementwise(name: str, numel: int, regs: int = 30) -> Kernel:
    blocks = math.ceil(numel / (4 * 128))
    return Kernel(name, (min(blocks, 1_048_576), 1, 1), (128, 1, 1), regs, 0)


def nvjet(gemm: Gemm, m: int, n: int) -> Kernel:
    grid_m = math.ceil(m / gemm.tile_m)
    grid_n = math.ceil(n / gemm.tile_n)
    return Kernel(gemm.name, (grid_n + grid_n % 2, grid_m, 1), (384, 1, 1), 168, gemm.smem, True)


def contiguous(dims: Sequence[int]) -> list[int]:
    strides: list[int] = []
    acc = 1
    for size in reversed(dims):
        strides.append(acc)
        acc *= size
    return list(reversed(strides))


# ---------------------------------------------------------------------------------------
# The simulator
# ---------------------------------------------------------------------------------------


class Tracer:
    """Simulates the CPU threads and GPU streams of one rank and records Kineto events."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.events: list[tuple[int, int, str]] = []
        self.now = {MAIN_TID: TRACE_START_NS + 85_000, AUTOGRAD_TID: TRACE_START_NS}
        self.ready = {COMPUTE_STREAM: TRACE_START_NS, COPY_STREAM: TRACE_START_NS}
        self.ready[NCCL_STREAM] = TRACE_START_NS
        self.stack: dict[int, list[int]] = {MAIN_TID: [], AUTOGRAD_TID: []}
        self.scopes: list[Annotation] = []
        self.ext = 0
        self.corr = 48_211
        self.ev_idx = 0
        self.seq_nr = 1_204
        # CUDA caching allocator (model weights, grads and AdamW state are already resident).
        self.allocated = 1_964_503_040
        self.reserved = 2_153_775_104
        self.pool: dict[int, list[int]] = {}
        self.next_addr = 0x7F1C_0E00_0000

    # -- bookkeeping -------------------------------------------------------------------
    def _emit(self, ts: int, text: str) -> None:
        self.events.append((ts, len(self.events), text))

    def _next_corr(self) -> int:
        self.corr += self.rng.choice((1, 1, 2, 2, 3))  # blocklisted API calls use ids too
        return self.corr

    def wait(self, tid: int, lo_ns: int, hi_ns: int) -> None:
        """Advance a CPU thread by host-side work of `lo_ns`..`hi_ns`."""
        self.now[tid] += self.rng.randint(lo_ns, hi_ns)

    def jitter(self, ns: int, sigma: float = 0.025) -> int:
        factor = max(0.85, self.rng.gauss(1.0, sigma))
        if self.rng.random() < 0.004:
            factor *= self.rng.uniform(1.2, 1.6)  # the odd slow launch (clocks, contention)
        return max(GPU_CLOCK_NS, int(ns * factor))

    def _gpu_slot(self, stream: int, earliest: int, dur: int) -> tuple[int, int]:
        start = max(self.ready[stream] + self.rng.randint(600, 1900), earliest)
        start -= start % GPU_CLOCK_NS
        dur -= dur % GPU_CLOCK_NS
        self.ready[stream] = start + dur
        for scope in self.scopes:
            span = scope.spans.setdefault(stream, [start, start + dur])
            span[0] = min(span[0], start)
            span[1] = max(span[1], start + dur)
        return start, dur

    # -- CPU side ----------------------------------------------------------------------
    @contextmanager
    def op(
        self,
        tid: int,
        name: str,
        *,
        inputs: Sequence[tuple[str, Sequence[int]]] = (),
        cat: str = "cpu_op",
        gpu: bool = False,
        sequence: bool = False,
        extra: Sequence[Arg] = (),
    ) -> Iterator[int]:
        """A cpu_op or user_annotation on `tid`; yields its External id."""
        start = self.now[tid]
        self.ext += 1
        ext = self.ext
        ev_idx = self.ev_idx
        self.ev_idx += 1
        scope = Annotation(name, ext) if gpu else None
        if scope is not None:
            self.scopes.append(scope)
        linked = cat == "cpu_op"  # launches link to the innermost op, never to an annotation
        if linked:
            self.stack[tid].append(ext)
        self.wait(tid, 700, 2600 if linked else 1500)
        yield ext
        self.wait(tid, 400, 1800)
        if linked:
            self.stack[tid].pop()
        args: list[Arg] = [("External id", ext)]
        if sequence:
            self.seq_nr += 1
            args += [("Sequence number", self.seq_nr), ("Fwd thread id", 0)]
        args.append(("Record function id", 0))
        if inputs:
            args += [
                ("Concrete Inputs", ["" for _ in inputs]),
                ("Input type", [dtype for dtype, _ in inputs]),
                ("Input Strides", [contiguous(dims) for _, dims in inputs]),
                ("Input Dims", [list(dims) for _, dims in inputs]),
            ]
        args += [*extra, ("Ev Idx", ev_idx)]
        self._emit(start, complete(cat, name, PID, tid, start, self.now[tid] - start, args))
        if scope is not None:
            self.scopes.remove(scope)
            for stream, (lo, hi) in sorted(scope.spans.items()):
                text = complete(
                    "gpu_user_annotation",
                    name,
                    DEVICE,
                    stream,
                    lo - 1,
                    hi - lo + 2,
                    [("External id", ext)],
                )
                self._emit(lo - 1, text)

    def annotation(self, tid: int, name: str, *, gpu: bool = True) -> AbstractContextManager[int]:
        return self.op(tid, name, cat="user_annotation", gpu=gpu)

    def _runtime(
        self,
        tid: int,
        api: str,
        dur: int,
        *,
        flow_corr: int | None = None,
        start: int | None = None,
    ) -> int:
        """Record a runtime/driver API call on `tid` (by default starting now); return its start."""
        if start is None:
            self.wait(tid, 300, 1400)
            start = self.now[tid]
        corr = flow_corr if flow_corr is not None else self._next_corr()
        args: list[Arg] = []
        if self.stack[tid]:
            args.append(("External id", self.stack[tid][-1]))
        args += [("cbid", CBID[api]), ("correlation", corr)]
        cat = "cuda_driver" if api in DRIVER_APIS else "cuda_runtime"
        self._emit(start, complete(cat, api, PID, tid, start, dur, args))
        if flow_corr is not None:
            self._emit(start, flow("s", corr, PID, tid, start))
        self.now[tid] = start + dur
        return start

    def sync_call(self, tid: int, api: str) -> None:
        """A runtime call with no device activity (event record, stream wait, ...)."""
        self._runtime(tid, api, self.rng.randint(700, 2600))

    def launch(
        self,
        tid: int,
        kernel: Kernel,
        dur_ns: int,
        *,
        stream: int = COMPUTE_STREAM,
        api: str = "cudaLaunchKernel",
        after: int = 0,
        extra: Sequence[Arg] = (),
    ) -> int:
        """Launch a kernel from `tid`; returns the kernel's end time on the GPU."""
        corr = self._next_corr()
        lo, hi = {"cudaLaunchKernel": (3200, 6500), "cudaLaunchKernelExC": (7000, 14000)}.get(
            api, (4500, 9500)
        )
        cost = self.rng.randint(lo, hi)
        if self.rng.random() < 0.01:
            cost += self.rng.randint(15_000, 60_000)  # preempted / page fault in the launch path
        start = self._runtime(tid, api, cost, flow_corr=corr)
        if stream == COMPUTE_STREAM and self.ready[NCCL_STREAM] > self.ready[COMPUTE_STREAM]:
            dur_ns = int(dur_ns * 1.06)  # NCCL shares SMs and HBM with overlapping compute
        gpu_start, dur = self._gpu_slot(
            stream, max(after, start + self.rng.randint(2800, 6000)), self.jitter(dur_ns)
        )
        blocks_per_sm, warps_per_sm, occ = occupancy(kernel)
        args: list[Arg] = []
        if self.stack[tid]:
            args.append(("External id", self.stack[tid][-1]))
        args += [
            ("queued", 0),
            ("device", DEVICE),
            ("context", 1),
            ("stream", stream),
            ("correlation", corr),
            ("registers per thread", kernel.regs),
            ("shared memory", kernel.smem),
            ("blocks per SM", blocks_per_sm),
            ("warps per SM", warps_per_sm),
            ("grid", list(kernel.grid)),
            ("block", list(kernel.block)),
            ("est. achieved occupancy %", occ),
            *extra,
        ]
        self._emit(gpu_start, complete("kernel", kernel.name, DEVICE, stream, gpu_start, dur, args))
        self._emit(gpu_start, flow("f", corr, DEVICE, stream, gpu_start))
        return gpu_start + dur

    def copy(
        self, tid: int, kind: str, nbytes: int, gbps: float, *, stream: int = COMPUTE_STREAM
    ) -> int:
        """cudaMemcpyAsync; pageable copies block the host until the DMA is done."""
        corr = self._next_corr()
        pageable = "Pageable" in kind
        gpu_dur = self.jitter(int(nbytes / (gbps * 1e9) * 1e9) + 1300)
        self.wait(tid, 300, 1400)
        start = self.now[tid]
        gpu_start, dur = self._gpu_slot(stream, start + self.rng.randint(3500, 7000), gpu_dur)
        host = gpu_start + dur + self.rng.randint(2000, 5000) - start
        cost = host if pageable else self.rng.randint(4500, 9000)
        self._runtime(tid, "cudaMemcpyAsync", cost, flow_corr=corr, start=start)
        args = self._copy_args(tid, stream, corr, nbytes, dur)
        self._emit(gpu_start, complete("gpu_memcpy", kind, DEVICE, stream, gpu_start, dur, args))
        self._emit(gpu_start, flow("f", corr, DEVICE, stream, gpu_start))
        return gpu_start + dur

    def _copy_args(self, tid: int, stream: int, corr: int, nbytes: int, dur: int) -> list[Arg]:
        """Args of a gpu_memcpy / gpu_memset, as Kineto writes them."""
        args: list[Arg] = []
        if self.stack[tid]:
            args.append(("External id", self.stack[tid][-1]))
        return [
            *args,
            ("device", DEVICE),
            ("context", 1),
            ("stream", stream),
            ("correlation", corr),
            ("bytes", nbytes),
            ("memory bandwidth (GB/s)", nbytes / dur),
        ]

    def memset(self, tid: int, nbytes: int, *, stream: int = COMPUTE_STREAM) -> None:
        corr = self._next_corr()
        start = self._runtime(tid, "cudaMemsetAsync", self.rng.randint(2600, 5200), flow_corr=corr)
        gpu_start, dur = self._gpu_slot(
            stream, start + self.rng.randint(2500, 5000), self.rng.randint(680, 1100)
        )
        args = self._copy_args(tid, stream, corr, nbytes, dur)
        self._emit(
            gpu_start,
            complete("gpu_memset", "Memset (Device)", DEVICE, stream, gpu_start, dur, args),
        )
        self._emit(gpu_start, flow("f", corr, DEVICE, stream, gpu_start))

    def stream_sync(self, tid: int, stream: int) -> None:
        """cudaStreamSynchronize: the host waits for the stream to drain."""
        self.wait(tid, 300, 1200)
        wait = max(0, self.ready[stream] - self.now[tid]) + self.rng.randint(2500, 6000)
        self._runtime(tid, "cudaStreamSynchronize", wait)

    # -- caching allocator -------------------------------------------------------------
    def malloc(self, tid: int, nbytes: int) -> Block:
        size = -(-nbytes // 512) * 512
        free = self.pool.get(size)
        if free:
            addr = free.pop()
        else:
            addr = self.next_addr
            self.next_addr += -(-size // (2 << 20)) * (2 << 20)
        self.allocated += size
        if self.allocated > self.reserved:
            segment = max(size, 20 << 20)
            self.reserved += -(-segment // (2 << 20)) * (2 << 20)
        self._memory(tid, addr, size)
        return Block(addr, size)

    def free(self, tid: int, block: Block) -> None:
        self.allocated -= block.size
        self.pool.setdefault(block.size, []).append(block.addr)
        self._memory(tid, block.addr, -block.size)

    def _memory(self, tid: int, addr: int, delta: int) -> None:
        self.wait(tid, 200, 700)
        ts = self.now[tid]
        args: list[Arg] = [
            ("Total Reserved", self.reserved),
            ("Total Allocated", self.allocated),
            ("Bytes", delta),
            ("Device Id", DEVICE),
            ("Device Type", 1),
            ("Addr", addr),
            ("Ev Idx", self.ev_idx),
        ]
        self.ev_idx += 1
        self._emit(
            ts,
            f'  {{\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n'
            f'    "pid": {PID}, "tid": {tid},\n    "ts": {us(ts)},\n'
            f'    "args": {{\n      {fmt_args(args)}\n    }}\n  }}',
        )


# ---------------------------------------------------------------------------------------
# The training step
# ---------------------------------------------------------------------------------------
BF16 = "c10::BFloat16"
X_DIMS = [BATCH, SEQ, D_MODEL]


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    numel: int


def parameters() -> list[Param]:
    """Model parameters in the order their gradients become ready during backward."""
    params = [
        Param("lm_head.weight", VOCAB * D_MODEL),
        Param("head.norm", 2 * D_MODEL),
        Param("head.dense", D_MODEL * D_MODEL + D_MODEL),
        Param("final_norm", 2 * D_MODEL),
    ]
    for layer in reversed(range(N_LAYERS)):
        params += [
            Param(f"layers.{layer}.mlp.fc2", D_FF * D_MODEL + D_MODEL),
            Param(f"layers.{layer}.mlp.fc1", D_MODEL * D_FF + D_FF),
            Param(f"layers.{layer}.norm2", 2 * D_MODEL),
            Param(f"layers.{layer}.attn.out", D_MODEL * D_MODEL + D_MODEL),
            Param(f"layers.{layer}.attn.qkv", D_MODEL * 3 * D_MODEL + 3 * D_MODEL),
            Param(f"layers.{layer}.norm1", 2 * D_MODEL),
        ]
    params.append(Param("embed.weight", VOCAB * D_MODEL))
    return params


def buckets(params: Sequence[Param]) -> dict[str, int]:
    """DDP buckets: param name -> number of elements all-reduced once that grad is ready."""
    ready: dict[str, int] = {}
    cap, size = DDP_FIRST_BUCKET_BYTES, 0
    for i, param in enumerate(params):
        size += param.numel
        if 2 * size >= cap or i == len(params) - 1:
            ready[param.name] = size
            cap, size = DDP_BUCKET_BYTES, 0
    return ready


FWD_GRAPH = "## Call CompiledFxGraph fwubfu5rd2hxf5kxaivyqdbvjjsxiehuc5oyxbj7vhbrgytd4bl2 ##"
BWD_GRAPH = "## Call CompiledFxGraph f3tzy7ugbdulmwxnmevbi2kswlbzyqyjpl5zj4zxaixxoyvnj3u6 ##"
DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
ACT_BYTES = TOKENS * D_MODEL * 2  # one bf16 activation of the residual stream


class TrainingJob:
    """Drives the Tracer through twelve DDP training steps."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t = Tracer(rng)
        self.params = parameters()
        self.buckets = buckets(self.params)
        self.n_params = sum(p.numel for p in self.params)
        self.slow_collective_step = FIRST_STEP + 7  # one peer arrives late in this step

    # -- building blocks ---------------------------------------------------------------------
    @contextmanager
    def node(self, tid: int, fn: str) -> Iterator[int]:
        """An autograd node as the engine records it: evaluate_function wrapping the node."""
        with (
            self.t.op(tid, f"autograd::engine::evaluate_function: {fn}"),
            self.t.op(tid, fn, sequence=True) as ext,
        ):
            yield ext

    def gemm(self, tid: int, name: str, gemm: Gemm, m: int, n: int, k: int) -> None:
        """aten::mm / aten::addmm: one cuBLAS nvjet kernel via cuLaunchKernelEx."""
        inputs = [(BF16, [m, k]), (BF16, [k, n])]
        if name == "aten::addmm":
            inputs.insert(0, (BF16, [n]))
        with self.t.op(tid, name, inputs=inputs):
            self.t.launch(tid, nvjet(gemm, m, n), gemm_ns(m, n, k), api="cuLaunchKernelEx")

    def linear(self, gemm: Gemm, n_out: int, n_in: int, *, bias: bool = True) -> None:
        t, main = self.t, MAIN_TID
        x = (BF16, [BATCH, SEQ, n_in])
        w = (BF16, [n_out, n_in])
        inputs = [x, w, (BF16, [n_out])] if bias else [x, w]
        with t.op(main, "aten::linear", inputs=inputs, sequence=True):
            with t.op(main, "aten::t", inputs=[w]):
                pass
            self.gemm(main, "aten::addmm" if bias else "aten::mm", gemm, TOKENS, n_out, n_in)

    def add(self, tid: int) -> None:
        """Residual add in forward, gradient accumulation at a residual fork in backward."""
        kernel = elementwise(K_ADD, TOKENS * D_MODEL)
        with self.t.op(tid, "aten::add", inputs=[(BF16, X_DIMS)] * 2, sequence=tid == MAIN_TID):
            self.t.launch(tid, kernel, membound_ns(3 * ACT_BYTES))

    def layer_norm(self) -> None:
        t, main = self.t, MAIN_TID
        ln_in = [(BF16, X_DIMS), ("ScalarList", []), (BF16, [D_MODEL]), (BF16, [D_MODEL])]
        with (
            t.op(main, "aten::layer_norm", inputs=ln_in, sequence=True),
            t.op(main, "aten::native_layer_norm", inputs=ln_in),
        ):
            kernel = Kernel(K_LAYER_NORM, (TOKENS, 1, 1), (32, 4, 1), 39, 24)
            t.launch(main, kernel, membound_ns(2 * ACT_BYTES))

    def triton(self, tid: int, name: str, numel: int, nbytes: int) -> None:
        """A Triton kernel of the compiled MLP, launched through the driver API."""
        reduction = name.startswith("triton_red")
        digest = hashlib.sha256(f"{SEED}:{name}".encode()).hexdigest()[:52]
        xblock, warps = (8, 8) if reduction else (1024, 4)
        grid = (math.ceil(numel / xblock), 1, 1)
        kernel = Kernel(name, grid, (32 * warps, 1, 1), 40 if reduction else 26, 64 * reduction)
        extra: list[Arg] = [
            ("kernel_backend", "triton"),
            ("kernel_file", f"/tmp/torchinductor_root/{digest[:2]}/c{digest}.py"),
            ("kernel_hash", digest),
            ("kernel_kwargs", f"XBLOCK={xblock}, RBLOCK=128" if reduction else f"XBLOCK={xblock}"),
            ("num_warps", warps),
            ("num_stages", 1),
            ("stream", COMPUTE_STREAM),
        ]
        with self.t.op(tid, name, extra=extra):
            self.t.launch(tid, kernel, membound_ns(nbytes, 3.0e12), api="cuLaunchKernel")

    # -- one training step -------------------------------------------------------------------
    def step(self, number: int) -> None:
        t, main = self.t, MAIN_TID
        with t.annotation(main, f"ProfilerStep#{number}"):
            with t.annotation(main, DATALOADER, gpu=False):
                if number == FIRST_STEP + 5:  # the input pipeline falls behind once
                    t.wait(main, 1_400_000, 1_900_000)
                else:
                    t.wait(main, 60_000, 240_000)
            batch = self.h2d_batch()
            if number % 4 == 1:
                self.pageable_copy()
            with t.annotation(main, "DistributedDataParallel.forward"):
                saved = self.forward()
            with t.annotation(main, "## backward ##"):
                self.backward(saved, number)
            self.clip_grad_norm()
            with t.annotation(main, "Optimizer.step#AdamW.step"):
                self.adamw()
            with t.annotation(main, "Optimizer.zero_grad#AdamW.zero_grad", gpu=False):
                t.wait(main, 20_000, 45_000)
            self.loss_item()
            for block in batch:
                t.free(main, block)
        t.wait(main, 25_000, 60_000)  # prof.step() and the Python loop

    def h2d_batch(self) -> list[Block]:
        """input_ids and labels from pinned memory on the copy stream, then wait_stream."""
        t, main = self.t, MAIN_TID
        dims = [BATCH, SEQ]
        blocks: list[Block] = []
        for _ in range(2):
            with (
                t.op(main, "aten::to", inputs=[("long int", dims), ("Scalar", [])]),
                t.op(main, "aten::_to_copy", inputs=[("long int", dims)]),
            ):
                with t.op(main, "aten::empty_strided", inputs=[("ScalarList", [])]):
                    blocks.append(t.malloc(main, TOKENS * 8))
                with t.op(main, "aten::copy_", inputs=[("long int", dims)] * 2):
                    t.sync_call(main, "cudaStreamIsCapturing")
                    kind = "Memcpy HtoD (Pinned -> Device)"
                    gbps = self.rng.uniform(21.0, 27.0)
                    t.copy(main, kind, TOKENS * 8, gbps, stream=COPY_STREAM)
        t.sync_call(main, "cudaEventRecord")
        t.sync_call(main, "cudaStreamWaitEvent")
        t.ready[COMPUTE_STREAM] = max(t.ready[COMPUTE_STREAM], t.ready[COPY_STREAM])
        return blocks

    def pageable_copy(self) -> None:
        """A loss-mask tensor built on the CPU and copied without pinning (the host blocks)."""
        t, main = self.t, MAIN_TID
        dims = [BATCH, SEQ, 64]
        nbytes = TOKENS * 64 * 4
        with (
            t.op(main, "aten::to", inputs=[("float", dims), ("Scalar", [])]),
            t.op(main, "aten::_to_copy", inputs=[("float", dims)]),
        ):
            with t.op(main, "aten::empty_strided", inputs=[("ScalarList", [])]):
                block = t.malloc(main, nbytes)
            with t.op(main, "aten::copy_", inputs=[("float", dims)] * 2):
                gbps = self.rng.uniform(8.5, 11.0)
                t.copy(main, "Memcpy HtoD (Pageable -> Device)", nbytes, gbps)
        t.free(main, block)

    def forward(self) -> list[Block]:
        """Embedding, the transformer blocks, the MLM-style head and the loss."""
        t, main = self.t, MAIN_TID
        saved: list[Block] = []
        emb_in = [(BF16, [VOCAB, D_MODEL]), ("long int", [BATCH, SEQ])]
        with t.op(main, "aten::embedding", inputs=emb_in, sequence=True):
            saved.append(t.malloc(main, ACT_BYTES))
            kernel = Kernel(K_EMBED, (TOKENS, 1, 1), (128, 1, 1), 32, 0)
            t.launch(main, kernel, membound_ns(2 * ACT_BYTES))
        for _layer in range(N_LAYERS):
            saved += self.block_forward()
        self.layer_norm()
        saved.append(t.malloc(main, ACT_BYTES))
        # head: dense + eager GELU + norm, then the vocabulary projection
        self.linear(GEMM_FWD_NARROW, D_MODEL, D_MODEL)
        saved.append(t.malloc(main, ACT_BYTES))
        with t.op(main, "aten::gelu", inputs=[(BF16, X_DIMS), ("Scalar", [])], sequence=True):
            kernel = elementwise(K_GELU, TOKENS * D_MODEL, 31)
            t.launch(main, kernel, membound_ns(2 * ACT_BYTES))
        saved.append(t.malloc(main, ACT_BYTES))
        self.layer_norm()
        saved.append(t.malloc(main, ACT_BYTES))
        self.linear(GEMM_FWD, VOCAB, D_MODEL, bias=False)
        saved.append(t.malloc(main, TOKENS * VOCAB * 2))
        logits = [(BF16, [TOKENS, VOCAB])]
        log_probs = [("float", [TOKENS, VOCAB])]
        loss_in = [*logits, ("long int", [TOKENS])]
        with t.op(main, "aten::cross_entropy_loss", inputs=loss_in, sequence=True):
            with (
                t.op(main, "aten::log_softmax", inputs=logits),
                t.op(main, "aten::_log_softmax", inputs=logits),
            ):
                saved.append(t.malloc(main, TOKENS * VOCAB * 4))
                kernel = Kernel(K_LOG_SOFTMAX, (TOKENS, 1, 1), (1024, 1, 1), 32, 64)
                t.launch(main, kernel, membound_ns(TOKENS * VOCAB * 6))
            with (
                t.op(main, "aten::nll_loss_nd", inputs=log_probs),
                t.op(main, "aten::nll_loss_forward", inputs=log_probs),
            ):
                t.launch(main, Kernel(K_NLL, (1, 1, 1), (1024, 1, 1), 30, 8192), 9_000)
        return saved

    def block_forward(self) -> list[Block]:
        t, main = self.t, MAIN_TID
        saved: list[Block] = []
        self.layer_norm()
        saved.append(t.malloc(main, ACT_BYTES))
        self.linear(GEMM_FWD, 3 * D_MODEL, D_MODEL)
        saved.append(t.malloc(main, 3 * ACT_BYTES))
        qkv = [(BF16, [BATCH, N_HEADS, SEQ, HEAD_DIM])] * 3
        with (
            t.op(main, "aten::scaled_dot_product_attention", inputs=qkv, sequence=True),
            t.op(main, "aten::_scaled_dot_product_flash_attention", inputs=qkv),
            t.op(main, "aten::_flash_attention_forward", inputs=qkv),
        ):
            saved.append(t.malloc(main, ACT_BYTES))
            flops = 4 * BATCH * N_HEADS * SEQ * SEQ * HEAD_DIM // 2  # causal
            grid = (SEQ // 128, BATCH, N_HEADS)
            kernel = Kernel(K_FLASH_FWD, grid, (128, 1, 1), 255, 49152)
            t.launch(main, kernel, int(flops / 360e12 * 1e9) + 4000)
        self.linear(GEMM_FWD_NARROW, D_MODEL, D_MODEL)
        self.add(main)
        saved.append(t.malloc(main, ACT_BYTES))
        self.layer_norm()
        saved.append(t.malloc(main, ACT_BYTES))
        # the MLP is torch.compile'd: cuBLAS for the matmuls, Triton for bias + GELU
        with (
            t.op(main, "CompiledFunction", sequence=True),
            t.annotation(main, FWD_GRAPH, gpu=False),
        ):
            self.gemm(main, "aten::mm", GEMM_FWD, TOKENS, D_FF, D_MODEL)
            saved.append(t.malloc(main, 4 * ACT_BYTES))
            self.triton(main, "triton_poi_fused_add_gelu_0", TOKENS * D_FF, 8 * ACT_BYTES)
            self.gemm(main, "aten::addmm", GEMM_FWD_NARROW, TOKENS, D_MODEL, D_FF)
        self.add(main)
        saved.append(t.malloc(main, ACT_BYTES))
        return saved

    # -- backward on the autograd thread -------------------------------------------------------
    def grad_ready(self, name: str, number: int) -> None:
        """DDP's autograd hook: when a bucket is complete, all-reduce it on the NCCL stream."""
        nelems = self.buckets.get(name)
        if nelems is None:
            return
        t, tid = self.t, AUTOGRAD_TID
        comm: list[Arg] = [
            ("Collective name", "allreduce"),
            ("In msg nelems", nelems),
            ("Out msg nelems", nelems),
            ("Group size", WORLD_SIZE),
            ("dtype", "BFloat16"),
            ("In split size", "[]"),
            ("Out split size", "[]"),
            ("Process Group Name", "0"),
            ("Process Group Description", "default_pg"),
            ("Process Group Ranks", str(list(range(WORLD_SIZE)))),
        ]
        extra: list[Arg] = [*comm, ("Global rank start", 0), ("Global rank stride", 1)]
        with t.op(tid, "c10d::allreduce_"), t.op(tid, "record_param_comms", extra=extra):
            t.sync_call(tid, "cudaEventRecord")
            t.sync_call(tid, "cudaStreamWaitEvent")
            after = t.ready[COMPUTE_STREAM]  # the event the NCCL stream waits on
            with t.annotation(tid, "nccl:all_reduce"):
                dur = allreduce_ns(nelems)
                if number == self.slow_collective_step and name == "embed.weight":
                    dur += 1_350_000  # a straggling peer holds up the last bucket
                kernel = Kernel(K_ALLREDUCE, (24, 1, 1), (640, 1, 1), 96, 87568, True)
                api = "cudaLaunchKernelExC"
                t.launch(tid, kernel, dur, stream=NCCL_STREAM, api=api, after=after, extra=comm)
            t.sync_call(tid, "cudaEventRecord")

    def backward(self, saved: list[Block], number: int) -> None:
        t, main, tid = self.t, MAIN_TID, AUTOGRAD_TID
        t.now[tid] = max(t.now[tid], t.now[main] + self.rng.randint(14_000, 30_000))
        probs = [("float", [TOKENS, VOCAB])]
        with (
            self.node(tid, "NllLossBackward0"),
            t.op(tid, "aten::nll_loss_backward", inputs=[("float", []), *probs]),
        ):
            grad = t.malloc(tid, TOKENS * VOCAB * 4)
            kernel = elementwise(K_FILL, TOKENS * VOCAB, 16)
            t.launch(tid, kernel, membound_ns(TOKENS * VOCAB * 4))
            t.launch(tid, Kernel(K_NLL_BWD, (64, 1, 1), (128, 1, 1), 24, 0), 4_500)
        with (
            self.node(tid, "LogSoftmaxBackward0"),
            t.op(tid, "aten::_log_softmax_backward_data", inputs=probs * 2),
        ):
            dlogits = t.malloc(tid, TOKENS * VOCAB * 2)
            kernel = Kernel(K_LOG_SOFTMAX_BWD, (TOKENS, 1, 1), (1024, 1, 1), 38, 0)
            t.launch(tid, kernel, membound_ns(TOKENS * VOCAB * 10))
        t.free(tid, grad)
        t.free(tid, saved.pop())  # log-probs
        t.free(tid, saved.pop())  # logits
        self.mm_backward("MmBackward0", VOCAB, D_MODEL, bias=False)
        t.free(tid, dlogits)
        self.grad_ready("lm_head.weight", number)
        self.norm_backward()
        t.free(tid, saved.pop())
        self.grad_ready("head.norm", number)
        with (
            self.node(tid, "GeluBackward0"),
            t.op(tid, "aten::gelu_backward", inputs=[(BF16, X_DIMS)] * 2),
        ):
            kernel = elementwise(K_GELU_BWD, TOKENS * D_MODEL, 34)
            t.launch(tid, kernel, membound_ns(3 * ACT_BYTES))
        t.free(tid, saved.pop())
        self.mm_backward("AddmmBackward0", D_MODEL, D_MODEL, bias=True)
        t.free(tid, saved.pop())
        self.grad_ready("head.dense", number)
        self.norm_backward()
        t.free(tid, saved.pop())
        self.grad_ready("final_norm", number)
        for layer in reversed(range(N_LAYERS)):
            self.block_backward(layer, saved, number)
        emb_in = [(BF16, X_DIMS), ("long int", [BATCH, SEQ])]
        with (
            self.node(tid, "EmbeddingBackward0"),
            t.op(tid, "aten::embedding_dense_backward", inputs=emb_in),
        ):
            t.launch(tid, Kernel(K_RADIX_SORT, (64, 1, 1), (512, 1, 1), 64, 37_888), 9_800)
            kernel = Kernel(K_GRAD_WEIGHT, (256, 1, 1), (32, 4, 1), 40, 0)
            t.launch(tid, kernel, membound_ns(ACT_BYTES))
            kernel = Kernel(K_SUM_SCATTER, (256, 1, 1), (32, 4, 1), 40, 0)
            t.launch(tid, kernel, membound_ns(ACT_BYTES))
        t.free(tid, saved.pop())
        self.grad_ready("embed.weight", number)
        # Reducer::finalize_backward: the default stream waits for the last bucket
        t.sync_call(tid, "cudaStreamWaitEvent")
        t.ready[COMPUTE_STREAM] = max(t.ready[COMPUTE_STREAM], t.ready[NCCL_STREAM])
        t.now[main] = max(t.now[main], t.now[tid] + self.rng.randint(8_000, 20_000))

    def mm_backward(self, fn: str, n_out: int, n_in: int, *, bias: bool) -> None:
        """AddmmBackward0 / MmBackward0: data-gradient GEMM, weight-gradient GEMM, bias sum."""
        t, tid = self.t, AUTOGRAD_TID
        with self.node(tid, fn):
            self.gemm(tid, "aten::mm", GEMM_DGRAD, TOKENS, n_in, n_out)
            with t.op(tid, "aten::t", inputs=[(BF16, [TOKENS, n_out])]):
                pass
            self.gemm(tid, "aten::mm", GEMM_WGRAD, n_out, n_in, TOKENS)
            if bias:
                inputs = [(BF16, [TOKENS, n_out]), ("ScalarList", []), ("Scalar", [])]
                with t.op(tid, "aten::sum", inputs=inputs):
                    t.memset(tid, 4)  # the reduction's cross-block semaphore
                    kernel = Kernel(K_SUM, (math.ceil(n_out / 32), 16, 1), (32, 16, 1), 32, 4112)
                    t.launch(tid, kernel, membound_ns(TOKENS * n_out * 2))

    def norm_backward(self) -> None:
        t, tid = self.t, AUTOGRAD_TID
        with (
            self.node(tid, "NativeLayerNormBackward0"),
            t.op(tid, "aten::native_layer_norm_backward", inputs=[(BF16, X_DIMS)] * 2),
        ):
            kernel = Kernel(K_LAYER_NORM_BWD_INPUT, (TOKENS, 1, 1), (128, 1, 1), 40, 0)
            t.launch(tid, kernel, membound_ns(3 * ACT_BYTES))
            kernel = Kernel(K_LAYER_NORM_BWD_GAMMA, (D_MODEL // 32, 1, 1), (32, 32, 1), 64, 8448)
            t.launch(tid, kernel, membound_ns(2 * ACT_BYTES) + 3_000)

    def block_backward(self, layer: int, saved: list[Block], number: int) -> None:
        t, tid = self.t, AUTOGRAD_TID
        prefix = f"layers.{layer}"
        t.free(tid, saved.pop())  # block output
        with self.node(tid, "CompiledFunctionBackward"), t.annotation(tid, BWD_GRAPH, gpu=False):
            self.triton(tid, "triton_red_fused_sum_0", D_MODEL, ACT_BYTES)
            self.gemm(tid, "aten::mm", GEMM_DGRAD, TOKENS, D_FF, D_MODEL)
            self.gemm(tid, "aten::mm", GEMM_WGRAD, D_MODEL, D_FF, TOKENS)
            self.grad_ready(f"{prefix}.mlp.fc2", number)
            name = "triton_poi_fused_add_gelu_gelu_backward_1"
            self.triton(tid, name, TOKENS * D_FF, 12 * ACT_BYTES)
            t.free(tid, saved.pop())  # fc1 pre-activation
            self.triton(tid, "triton_red_fused_sum_2", D_FF, 4 * ACT_BYTES)
            self.gemm(tid, "aten::mm", GEMM_DGRAD, TOKENS, D_MODEL, D_FF)
            self.gemm(tid, "aten::mm", GEMM_WGRAD, D_FF, D_MODEL, TOKENS)
        self.grad_ready(f"{prefix}.mlp.fc1", number)
        t.free(tid, saved.pop())  # norm2 output
        self.norm_backward()
        self.grad_ready(f"{prefix}.norm2", number)
        self.add(tid)
        t.free(tid, saved.pop())  # attention residual
        self.mm_backward("AddmmBackward0", D_MODEL, D_MODEL, bias=True)
        self.grad_ready(f"{prefix}.attn.out", number)
        qkv = [(BF16, [BATCH, N_HEADS, SEQ, HEAD_DIM])] * 4
        with (
            self.node(tid, "ScaledDotProductFlashAttentionBackward0"),
            t.op(tid, "aten::_scaled_dot_product_flash_attention_backward", inputs=qkv),
            t.op(tid, "aten::_flash_attention_backward", inputs=qkv),
        ):
            dqkv = t.malloc(tid, 3 * ACT_BYTES)
            flops = 10 * BATCH * N_HEADS * SEQ * SEQ * HEAD_DIM // 2  # causal
            grid = (SEQ // 128, BATCH, N_HEADS)
            kernel = Kernel(K_FLASH_BWD_DOT, grid, (256, 1, 1), 40, 0)
            t.launch(tid, kernel, membound_ns(2 * ACT_BYTES))
            kernel = Kernel(K_FLASH_BWD, grid, (256, 1, 1), 255, 98304)
            t.launch(tid, kernel, int(flops / 300e12 * 1e9) + 6000)
            kernel = Kernel(K_FLASH_BWD_DQ, grid, (256, 1, 1), 56, 32768)
            t.launch(tid, kernel, membound_ns(3 * ACT_BYTES))
        t.free(tid, saved.pop())  # attention output
        t.free(tid, saved.pop())  # qkv
        self.mm_backward("AddmmBackward0", 3 * D_MODEL, D_MODEL, bias=True)
        t.free(tid, dqkv)
        self.grad_ready(f"{prefix}.attn.qkv", number)
        t.free(tid, saved.pop())  # norm1 output
        self.norm_backward()
        self.grad_ready(f"{prefix}.norm1", number)
        self.add(tid)

    # -- optimizer and the end of the step -------------------------------------------------------
    def clip_grad_norm(self) -> None:
        t, main = self.t, MAIN_TID
        n_tensors = 6 + 10 * N_LAYERS + 1
        with t.op(main, "aten::_foreach_norm", inputs=[("TensorList", []), ("Scalar", [])]):
            for share in (0.55, 0.45):
                kernel = Kernel(K_LPNORM, (320, 1, 1), (512, 1, 1), 32, 2048)
                t.launch(main, kernel, membound_ns(2 * int(self.n_params * share)))
            kernel = Kernel(K_LPNORM_CLEANUP, (n_tensors, 1, 1), (512, 1, 1), 22, 2048)
            t.launch(main, kernel, 3_100)
        norm_in = [("float", [n_tensors]), ("Scalar", [])]
        with t.op(main, "aten::linalg_vector_norm", inputs=norm_in):
            t.launch(main, Kernel(K_NORM, (1, 1, 1), (64, 1, 1), 32, 0), 3_600)
        with t.op(main, "aten::_foreach_mul_", inputs=[("TensorList", []), ("float", [])]):
            for share in (0.55, 0.45):
                kernel = Kernel(K_FOREACH_MUL, (320, 1, 1), (512, 1, 1), 30, 2048)
                t.launch(main, kernel, membound_ns(4 * int(self.n_params * share)))

    def adamw(self) -> None:
        """torch.optim.AdamW(fused=True): one multi_tensor_apply launch per chunk of tensors."""
        t, main = self.t, MAIN_TID
        with t.op(main, "aten::_fused_adamw_", inputs=[("TensorList", [])] * 5):
            for share in (0.38, 0.34, 0.28):
                numel = int(self.n_params * share)
                grid = (math.ceil(numel / 65536 / 4) * 4, 1, 1)
                kernel = Kernel(K_ADAMW, grid, (512, 1, 1), 78, 0)
                t.launch(main, kernel, membound_ns(22 * numel, 3.0e12))

    def loss_item(self) -> None:
        """loss.item(): a 4-byte copy to pinned memory and a stream sync; the GPU then idles."""
        t, main = self.t, MAIN_TID
        with (
            t.op(main, "aten::item", inputs=[("float", [])], sequence=True),
            t.op(main, "aten::_local_scalar_dense", inputs=[("float", [])]),
        ):
            t.copy(main, "Memcpy DtoH (Device -> Pinned)", 4, 0.0024)
            t.stream_sync(main, COMPUTE_STREAM)

    def run(self) -> None:
        for number in range(FIRST_STEP, FIRST_STEP + N_STEPS):
            self.step(number)


# ---------------------------------------------------------------------------------------
# Writing the file
# ---------------------------------------------------------------------------------------


def render(rng: random.Random) -> str:
    """The whole trace as JSON text, laid out like Kineto's ChromeTraceLogger."""
    job = TrainingJob(rng)
    job.run()
    tracer = job.t
    end = max(max(tracer.now.values()), max(tracer.ready.values())) + 40_000
    events = [text for _, _, text in sorted(tracer.events)]
    start = TRACE_START_NS
    meta: list[str] = [
        metadata("process_name", PID, 0, start, [("name", "python3")]),
        metadata("process_labels", PID, 0, start, [("labels", "CPU")]),
        metadata("process_sort_index", PID, 0, start, [("sort_index", PID)]),
    ]
    for gpu in range(WORLD_SIZE):
        meta += [
            metadata("process_name", gpu, 0, start, [("name", "python3")]),
            metadata("process_labels", gpu, 0, start, [("labels", f"GPU {gpu}")]),
            metadata("process_sort_index", gpu, 0, start, [("sort_index", 5_000_000 + gpu)]),
        ]
    for stream in (COMPUTE_STREAM, COPY_STREAM, NCCL_STREAM):
        meta += [
            metadata("thread_name", DEVICE, stream, start, [("name", f"stream {stream} ")]),
            metadata("thread_sort_index", DEVICE, stream, start, [("sort_index", stream)]),
        ]
    for tid, label in ((MAIN_TID, "python3"), (AUTOGRAD_TID, "pt_autograd_0")):
        meta += [
            metadata("thread_name", PID, tid, start, [("name", f"thread {tid} ({label})")]),
            metadata("thread_sort_index", PID, tid, start, [("sort_index", tid)]),
        ]
    span_start = start - 60_000
    tail = [
        f'  {{\n    "ph": "X", "cat": "Trace", "ts": {us(span_start)}, '
        f'"dur": {us(end - span_start)},\n    "pid": "Spans", "tid": "PyTorch Profiler",\n'
        f'    "name": "PyTorch Profiler (0)",\n    "args": {{\n      "Op count": 0\n    }}\n  }}',
        metadata("process_sort_index", "Spans", 0, span_start, [("sort_index", 536870912)]),
        f'  {{\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n'
        f'    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": {us(span_start)}\n  }}',
        f'  {{\n    "name": "Record Window End", "ph": "i", "s": "g",\n'
        f'    "pid": "", "tid": "", "ts": {us(end + 1_000)}\n  }}',
    ]
    devices = ",\n".join(
        "    {\n      " + fmt_args([("id", gpu), *H200_PROPERTIES]) + "\n    }"
        for gpu in range(WORLD_SIZE)
    )
    ranks = str(list(range(WORLD_SIZE)))
    distributed = {
        "backend": "nccl",
        "rank": RANK,
        "world_size": WORLD_SIZE,
        "pg_count": 1,
        "pg_config": [
            {
                "pg_name": "0",
                "pg_desc": "default_pg",
                "backend_config": "cuda:nccl",
                "pg_size": WORLD_SIZE,
                "ranks": ranks,
            }
        ],
        "nccl_version": "2.27.7",
    }
    synthetic = {
        "synthetic": True,
        "generator": "backend/sample_data/generate.py",
        "seed": SEED,
        "note": "generated by perfdash from a cost model; not measured on hardware",
    }
    trace_id = f"{rng.getrandbits(128):032X}"
    header = (
        "\n  {\n"
        '    "schemaVersion": 1,\n'
        f'    "deviceProperties": [\n{devices}\n    ],\n'
        f'      "distributedInfo": {jv(distributed)},\n'
        f'      "trace_id": "{trace_id}",\n'
        '      "profile_memory": 1,\n'
        '      "cuda_driver_version": 13000,\n'
        '      "record_shapes": 1,\n'
        '      "cuda_runtime_version": 13000,\n'
        '      "cupti_version": 130001,\n'
        f'      "perfdash_sample": {jv(synthetic)},\n'
        '  "displayTimeUnit": "ms",\n'
        f'  "baseTimeNanoseconds": {BASE_TIME_NS},\n'
        '  "traceEvents": [\n'
    )
    body = ",\n".join([*events, *meta, *tail])
    return (
        header
        + body
        + '\n  ],\n  "traceName": "/tmp/synthetic_train_8gpu_rank0.pt.trace.json"\n}\n'
    )


def gzip_bytes(data: bytes) -> bytes:
    """A reproducible gzip member: mtime 0, no file name, OS byte 255, level 9."""
    header = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x02\xff"
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, 9)
    body = compressor.compress(data) + compressor.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return header + body + trailer


def generate(seed: int = SEED) -> bytes:
    """The gzip-compressed trace for `seed`."""
    text = render(random.Random(seed))
    return gzip_bytes(text.encode("utf-8"))


def main(argv: Sequence[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else SAMPLE_DIR / OUTPUT_NAME
    data = generate()
    out.write_bytes(data)
    print(f"wrote {out} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

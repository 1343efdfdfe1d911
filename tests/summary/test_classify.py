"""The naming rules behind the summary, one parametrized table per rule."""

from __future__ import annotations

import pytest

from ingest.classify import copy_kind, fusion_pattern, is_communication, is_host_sync, phase_of
from ingest.distribution import distribution, nearest_rank
from ingest.events import Event, EventKind


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None, True),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", None, True),
        ("void ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)", None, True),
        ("rcclGenericKernel", None, True),
        ("all_to_all_kernel", {"Collective name": "all_to_all"}, True),
        ("nvjet_sm90_tst_64x64", None, False),
        ("void at::native::reduce_kernel<512, 1>", None, False),
    ],
)
def test_communication_kernels(name: str, args: dict[str, str] | None, expected: bool) -> None:
    assert is_communication(Event(EventKind.KERNEL, name, 0, 1, args=args)) is expected


def test_only_kernels_are_communication() -> None:
    assert not is_communication(Event(EventKind.ANNOTATION, "nccl:all_reduce", 0, 1))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("triton_red_fused_sum_0", "triton_"),
        ("void at::native::_fused_adamw_kernel", "fused"),
        ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_kernel", "flash"),
        ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", "fmha"),
        ("cudnn_generated_fort_native_sdpa_sm90", "sdpa"),
        ("void at::native::multi_tensor_apply_kernel<...>", "multi_tensor_apply"),
        ("nvjet_sm90_tst_128x128", None),
    ],
)
def test_fused_kernels(name: str, expected: str | None) -> None:
    assert fusion_pattern(name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Memcpy HtoD (Pageable -> Device)", ("HtoD", "Pageable", "Device")),
        ("Memcpy DtoH (Device -> Pinned)", ("DtoH", "Device", "Pinned")),
        ("Memcpy DtoD (Device -> Device)", ("DtoD", "Device", "Device")),
        ("Memcpy PtoP (Device -> Device)", ("PtoP", "Device", "Device")),
        ("[CUDA memcpy Host-to-Device]", ("HtoD", "", "")),
        ("Memset (Device)", ("", "", "Device")),
        ("Memcpy", ("", "", "")),
    ],
)
def test_copy_names(name: str, expected: tuple[str, str, str]) -> None:
    assert tuple(copy_kind(name)) == expected


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        (EventKind.ANNOTATION, "## forward ##", "forward"),
        (EventKind.ANNOTATION, "DistributedDataParallel.forward", "forward"),
        (EventKind.ANNOTATION, "## backward ##", "backward"),
        (EventKind.ANNOTATION, "Optimizer.step#AdamW.step", "optimizer"),
        (EventKind.ANNOTATION, "Optimizer.zero_grad#AdamW.zero_grad", "optimizer"),
        (EventKind.CPU_OP, "autograd::engine::evaluate_function: MmBackward0", "backward"),
        (EventKind.CPU_OP, "aten::mm", None),
        (EventKind.GPU_ANNOTATION, "## forward ##", None),
        (EventKind.ANNOTATION, "ProfilerStep#3", None),
    ],
)
def test_phases(kind: EventKind, name: str, expected: str | None) -> None:
    assert phase_of(kind, name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cudaStreamSynchronize", True),
        ("cudaDeviceSynchronize", True),
        ("hipEventSynchronize", True),
        ("cudaMemcpy", True),
        ("aten::item", True),
        ("aten::_local_scalar_dense", True),
        ("cudaMemcpyAsync", False),
        ("cudaLaunchKernel", False),
    ],
)
def test_host_sync(name: str, expected: bool) -> None:
    assert is_host_sync(name) is expected


@pytest.mark.parametrize(
    ("values", "percent", "expected"),
    [
        ([1], 50, 1),
        ([1, 2], 50, 1),
        ([1, 2], 95, 2),
        (list(range(1, 101)), 95, 95),
        (list(range(1, 21)), 95, 19),
        (list(range(1, 22)), 95, 20),
        (list(range(1, 11)), 50, 5),
    ],
)
def test_nearest_rank(values: list[int], percent: int, expected: int) -> None:
    assert nearest_rank(values, percent) == expected


def test_distribution_floor_mean() -> None:
    assert distribution([3, 1, 2, 2])["mean_ns"] == 2
    assert distribution([1, 2])["mean_ns"] == 1

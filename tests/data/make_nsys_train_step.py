#!/usr/bin/env python3
"""Workload for the Nsight Systems training-step fixture (`tests/data/nsys/train_step.*`).

Run under `nsys profile` by `tests/data/make_gpu_fixtures.sh`; it prints nothing. It makes the
activity an nsys export must carry for perfdash's parser tests:

- NVTX push/pop ranges per step (`step N` > `forward` / `backward` / `optimizer`) and a
  start/end range (`allreduce grads`) around the gradient all-reduce;
- NCCL: a one-rank process group with the NCCL backend, so every gradient `all_reduce` goes
  through NCCL (its kernels, and its NVTX ranges in NCCL's own domain);
- a small bf16-autocast transformer encoder with AdamW (cuBLAS GEMMs, softmax, layer norm,
  elementwise and fused optimizer kernels);
- a CUDA graph captured and replayed three times (profiled with `--cuda-graph-trace=node`, so
  its kernels have graph node ids);
- one `cuMemsetD8Async` (torch's `zeros` is a fill kernel, not a memset).

Fixed seed; needs one CUDA GPU and torch with NCCL.
"""

from __future__ import annotations

import ctypes
import os

import torch
import torch.distributed as dist
from torch import nn

STEPS = 3
SEED = 1234


def _memset(t: torch.Tensor) -> None:
    """Issue one real driver memset on the current stream."""
    drv = ctypes.CDLL("libcuda.so.1")
    fn = drv.cuMemsetD8Async
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    err = fn(t.data_ptr(), 0, t.numel() * t.element_size(), stream)
    if err:
        raise RuntimeError(f"cuMemsetD8Async failed: {err}")


def _train(dev: torch.device) -> None:
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(8, 128, 256, device=dev)
    for step in range(STEPS):
        torch.cuda.nvtx.range_push(f"step {step}")
        torch.cuda.nvtx.range_push("forward")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        loss.backward()
        torch.cuda.nvtx.range_pop()
        handle = torch.cuda.nvtx.range_start("allreduce grads")
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
        torch.cuda.nvtx.range_end(handle)
        torch.cuda.nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()


def _graph(dev: torch.device) -> None:
    static_in = torch.randn(1 << 20, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            (static_in * 2).relu_()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = (static_in * 2).relu_() + 1
    torch.cuda.nvtx.range_push("graph replay")
    for _ in range(3):
        graph.replay()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    assert static_out.shape == static_in.shape


def main() -> None:
    """Run the workload once."""
    torch.manual_seed(SEED)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        _train(dev)
        buf = torch.empty(1 << 20, dtype=torch.uint8, device=dev)
        torch.cuda.nvtx.range_push("memset")
        _memset(buf)
        torch.cuda.nvtx.range_pop()
        _graph(dev)
        torch.cuda.synchronize()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Fixed seeds, deterministic algorithms, and a sha256 over what a workload produced.

The hash covers dtype, shape and raw bytes of each tensor (outputs, loss, parameters),
so two runs agree only if they are bit-identical, which is what the determinism SLA
compares against the baseline.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
from collections.abc import Iterable

import torch

from workers.bench.spec import Determinism


def seed_everything(seed: int, mode: Determinism) -> None:
    """Seed Python and torch, and ask torch for deterministic kernels as `mode` says.

    `strict` raises on ops without a deterministic kernel (and makes Flash Attention's
    backward deterministic); `warn` only warns; `off` leaves torch's defaults.
    cuBLAS needs its workspace config set before the first CUDA call, hence here.
    """
    if mode != "off":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=mode == "warn")
        torch.backends.cudnn.benchmark = False
    random.seed(seed)
    torch.manual_seed(seed)


def tensor_digest(tensors: Iterable[torch.Tensor]) -> str:
    """sha256 over each tensor's dtype, shape and bytes (copied to host memory)."""
    digest = hashlib.sha256()
    for t in tensors:
        host = t.detach().contiguous().cpu()
        digest.update(f"{host.dtype}{tuple(host.shape)};".encode())
        if host.numel():
            # No numpy needed: read the contiguous storage directly.
            digest.update(ctypes.string_at(host.data_ptr(), host.numel() * host.element_size()))
    return digest.hexdigest()


def combine_digests(digests: Iterable[str]) -> str:
    """One hash for a whole run (all sweep points, in order).

    >>> combine_digests(["a", "b"]) == combine_digests(["a", "b"])
    True
    """
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()

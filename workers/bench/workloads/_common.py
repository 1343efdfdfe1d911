"""Helpers shared by the built-in workloads: dtype names and typed param access."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "tf32": torch.float32,
}


def dtype_of(params: Mapping[str, Any], default: str = "bf16") -> torch.dtype:
    """The `dtype` param as a torch dtype; `tf32` is fp32 storage with TF32 matmuls."""
    name = str(params.get("dtype", default))
    if name not in DTYPES:
        raise ValueError(f"params.dtype: {name!r} is not one of {sorted(DTYPES)}")
    return DTYPES[name]


def int_param(params: Mapping[str, Any], key: str, default: int) -> int:
    """A positive integer param, with an error that names it."""
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"params.{key}: expected a positive integer, got {value!r}")
    return value

"""A transformer-block training step: step time, tokens/s and peak memory.

Pre-norm blocks (attention through SDPA, causal, then a 4x GELU MLP) under bf16
autocast on CUDA, an MSE loss against a fixed random target, and AdamW. No embedding
layer, because its backward has no deterministic CUDA kernel and `strict` mode would
refuse it. FLOPs are 6·params·tokens plus 3.5x the causal attention forward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from workers.bench.harness import Phase, Workload
from workers.bench.workloads._common import dtype_of, int_param


class Block(nn.Module):
    """One pre-norm transformer block."""

    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        attn = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.proj(attn.transpose(1, 2).reshape(b, s, d))
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


def prepare(params: Mapping[str, Any], device: torch.device) -> Workload:
    """Build the model, optimiser and a fixed batch from the current (seeded) RNG."""
    layers, d = int_param(params, "layers", 4), int_param(params, "d_model", 1024)
    heads, b = int_param(params, "heads", 16), int_param(params, "batch", 8)
    s = int_param(params, "seq", 512)
    if d % heads:
        raise ValueError(f"params.d_model ({d}) must be a multiple of params.heads ({heads})")
    amp_dtype = dtype_of(params, default="bf16" if device.type == "cuda" else "fp32")
    model = nn.Sequential(*(Block(d, heads) for _ in range(layers))).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(b, s, d, device=device)
    target = torch.randn(b, s, d, device=device)
    losses: list[torch.Tensor] = []

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
            loss = F.mse_loss(model(x).float(), target)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        losses[:] = [loss.detach()]

    n_params = sum(p.numel() for p in model.parameters())
    tokens = float(b * s)
    attn_fwd = 4.0 * b * s * s * d / 2 * layers
    phase = Phase(
        step=step,
        time_metric="step_time_ms",
        flops=6.0 * n_params * tokens + 3.5 * attn_fwd,
        flops_metric="tflops",
        items=tokens,
        items_metric="tokens_per_s",
        stateful=True,
    )
    return Workload(
        phases=[phase],
        outputs=lambda: [*losses, *(p.detach() for p in model.parameters())],
        notes={"parameters": n_params, "tokens_per_step": int(tokens)},
    )

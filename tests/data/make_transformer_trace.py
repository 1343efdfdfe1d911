#!/usr/bin/env python3
"""Make real torch.profiler traces of a transformer training loop on a CUDA GPU.

Purpose
-------
The torch.profiler ingest issue needs (a) traces whose kernel top-10 can be checked against
torch's own ``key_averages()``, and (b) a real trace of at least 150k events for the ingest
benchmark in ``perf/``. This script trains a small GPT-style decoder (pre-LayerNorm blocks,
SDPA attention, GELU MLP, bf16 autocast, AdamW with ``foreach=False`` so the optimizer shows up
as many small kernels, as in many real stacks) with a fixed seed, under ``torch.profiler``
with ``record_shapes=True`` and ``profile_memory=True``, and ``record_function`` ranges named
``forward``, ``backward`` and ``optimizer`` inside every ``ProfilerStep#N``.

It writes, into OUTDIR, for each variant NAME:

``NAME.pt.trace.json.gz``
    The trace, written by ``tensorboard_trace_handler(..., use_gzip=True)`` and renamed.
``NAME.key_averages.json``
    torch's own aggregate (see ``make_torch_trace.write_key_averages``).
``NAME.kernel_sums.json``
    Per-kernel count and total ns summed straight from the JSON with ``decimal.Decimal``.

Variants: ``h200_gpt_small`` (2 layers, 3 active steps: a committed test fixture) and
``h200_gpt_12l`` (12 layers, 12 active steps: the benchmark input, >= 150k events).

How to run (needs a CUDA GPU and torch)::

    python3 tests/data/make_transformer_trace.py OUTDIR [small|large|both]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import (
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_torch_trace import write_kernel_sums, write_key_averages

SEED = 1234
VOCAB, D_MODEL, HEADS, SEQ, BATCH = 8192, 512, 8, 256, 8


class Block(nn.Module):
    """A pre-LayerNorm transformer block: attention then MLP, each with a residual."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_MODEL)
        self.blocks = nn.ModuleList(Block(D_MODEL, HEADS) for _ in range(layers))
        self.ln = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def make(outdir: Path, name: str, layers: int, active: int) -> None:
    torch.manual_seed(SEED)
    device = torch.device("cuda")
    model = Gpt(layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    idx = torch.randint(0, VOCAB, (BATCH, SEQ), device=device)
    target = torch.randint(0, VOCAB, (BATCH, SEQ), device=device)

    def step() -> None:
        with record_function("forward"), torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, VOCAB).float(), target.view(-1))
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    tmp = Path(tempfile.mkdtemp())
    handler = tensorboard_trace_handler(str(tmp), worker_name=name, use_gzip=True)
    key_avg_path = outdir / f"{name}.key_averages.json"

    def on_ready(prof: profile) -> None:
        handler(prof)
        write_key_averages(prof, key_avg_path, "n/a")

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
        on_trace_ready=on_ready,
        record_shapes=True,
        profile_memory=True,
    ) as prof:
        for _ in range(active + 3):
            step()
            prof.step()
    torch.cuda.synchronize()
    (written,) = tmp.glob("*.pt.trace.json.gz")
    trace_path = outdir / f"{name}.pt.trace.json.gz"
    shutil.move(written, trace_path)
    sums = write_kernel_sums(trace_path, outdir / f"{name}.kernel_sums.json")
    events = sum(sums["event_counts_by_cat"].values())
    size, cats = trace_path.stat().st_size, sums["event_counts_by_cat"]
    print(f"{name}: {events} events, {size} bytes, cats {cats}")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not torch.cuda.is_available():
        print(f"usage: {argv[0]} OUTDIR [small|large|both] (needs CUDA)", file=sys.stderr)
        return 2
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    which = argv[2] if len(argv) > 2 else "both"
    if which in ("small", "both"):
        make(outdir, "h200_gpt_small", layers=2, active=3)
    if which in ("large", "both"):
        make(outdir, "h200_gpt_12l", layers=12, active=12)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

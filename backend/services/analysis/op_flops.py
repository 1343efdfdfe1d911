"""FLOP and byte estimates for torch ops from their recorded shapes (`record_shapes=True`).

torch.profiler writes no FLOP counts into its JSON (FORMATS.md §1.9), so a torch trace's
roofline can only be estimated: FLOPs by the standard formulas (2·M·K·N for a matmul,
2·N·Cout·(Cin/groups)·kh·kw·Hout·Wout for a convolution, 2·B·H·L·S·(E+Ev) for attention
forward and 2.5x that backward) and bytes as the sizes of the input tensors plus the output,
i.e. each tensor read or written once. Convolution padding and stride are not recorded, so
the output is assumed to have the input's spatial size (stride 1, "same" padding).

Public surface: `OpCost`, `estimate_op`, `ESTIMATED_OPS`.
"""

from dataclasses import dataclass
from math import prod
from typing import Any

DTYPE_BYTES: dict[str, int] = {
    "double": 8, "float": 4, "c10::BFloat16": 2, "c10::Half": 2, "BFloat16": 2, "Half": 2,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1, "int": 4, "long int": 8, "signed char": 1, "unsigned char": 1,
}  # fmt: skip
PRECISION: dict[int, str] = {8: "fp64", 4: "fp32", 2: "fp16", 1: "fp8"}


@dataclass(frozen=True, slots=True)
class OpCost:
    """What one op call did: floating-point operations, DRAM bytes and the precision."""

    flops: float
    bytes: float
    precision: str


Shape = list[int]


def _shapes(args: dict[str, Any]) -> tuple[list[Shape], list[str]]:
    dims = args.get("Input Dims") or []
    types = args.get("Input type") or []
    shapes = [d if isinstance(d, list) and all(isinstance(x, int) for x in d) else [] for d in dims]
    return shapes, [t if isinstance(t, str) else "" for t in types] + [""] * len(shapes)


def _precision(dtype: str) -> str:
    if "BFloat16" in dtype:
        return "bf16"
    return PRECISION.get(DTYPE_BYTES.get(dtype, 4), "fp32")


def _matmul(a: Shape, b: Shape) -> tuple[float, Shape] | None:
    """FLOPs and output shape of `a @ b` with numpy broadcasting of batch dims."""
    if not a or not b:
        return None
    a2 = [1, *a] if len(a) == 1 else a
    b2 = [*b, 1] if len(b) == 1 else b
    m, k, n = a2[-2], a2[-1], b2[-1]
    if b2[-2] != k:
        return None
    batch_a, batch_b = a2[:-2], b2[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + batch_a
    batch_b = [1] * (width - len(batch_b)) + batch_b
    batch = [max(x, y) for x, y in zip(batch_a, batch_b, strict=True)]
    return 2.0 * prod(batch) * m * k * n, [*batch, m, n]


def _linear(x: Shape, w: Shape) -> tuple[float, Shape] | None:
    if len(w) != 2 or not x or x[-1] != w[1]:
        return None
    return 2.0 * prod(x[:-1]) * w[1] * w[0], [*x[:-1], w[0]]


def _conv(x: Shape, w: Shape) -> tuple[float, Shape] | None:
    if len(x) < 3 or len(w) != len(x) or x[1] % max(w[1], 1):
        return None
    spatial = x[2:]
    out = [x[0], w[0], *spatial]
    return 2.0 * x[0] * w[0] * w[1] * prod(w[2:]) * prod(spatial), out


def _attention(q: Shape, k: Shape, v: Shape) -> tuple[float, Shape] | None:
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None
    b, h, length, e = q
    s, ev = k[2], v[3]
    return 2.0 * b * h * length * s * (e + ev), [b, h, length, ev]


def _cost(name: str, shapes: list[Shape]) -> tuple[float, Shape, list[int]] | None:
    """(FLOPs, output shape, indexes of the inputs read) for a known op, else None."""
    s = shapes + [[]] * 4
    if name in ("aten::mm", "aten::matmul", "aten::bmm"):
        r = _matmul(s[0], s[1])
        return (r[0], r[1], [0, 1]) if r else None
    if name in ("aten::addmm", "aten::baddbmm"):
        r = _matmul(s[1], s[2])
        return (r[0], r[1], [0, 1, 2]) if r else None
    if name == "aten::linear":
        r = _linear(s[0], s[1])
        return (r[0], r[1], [0, 1, 2]) if r else None
    if name in CONV_OPS:
        r = _conv(s[0], s[1])
        return (r[0], r[1], [0, 1, 2]) if r else None
    if name in ATTENTION_OPS:
        r = _attention(s[0], s[1], s[2])
        return (r[0], r[1], [0, 1, 2]) if r else None
    if name in ATTENTION_BACKWARD_OPS:
        r = _attention(s[1], s[2], s[3])
        return (r[0] * 2.5, [], [0, 1, 2, 3, 4]) if r else None
    return None


CONV_OPS = frozenset(
    {"aten::convolution", "aten::_convolution", "aten::conv1d", "aten::conv2d",
     "aten::conv3d", "aten::cudnn_convolution", "aten::miopen_convolution"}
)  # fmt: skip
ATTENTION_OPS = frozenset(
    {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
     "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
     "aten::_flash_attention_forward", "aten::_efficient_attention_forward"}
)  # fmt: skip
ATTENTION_BACKWARD_OPS = frozenset(
    {"aten::_scaled_dot_product_flash_attention_backward",
     "aten::_scaled_dot_product_efficient_attention_backward",
     "aten::_scaled_dot_product_cudnn_attention_backward"}
)  # fmt: skip
ESTIMATED_OPS = frozenset(
    {"aten::mm", "aten::matmul", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::linear"}
    | CONV_OPS
    | ATTENTION_OPS
    | ATTENTION_BACKWARD_OPS
)


def estimate_op(name: str, args: dict[str, Any] | None) -> OpCost | None:
    """Estimate one op call's cost from its recorded `Input Dims` and `Input type`.

    Args:
        name: the op's name, e.g. `aten::mm`.
        args: the cpu_op event's args; None or without shapes gives None.

    Returns:
        The cost, or None for an op without a formula or without usable shapes.

    >>> c = estimate_op("aten::mm", {"Input Dims": [[512, 1024], [1024, 256]],
    ...                              "Input type": ["c10::BFloat16", "c10::BFloat16"]})
    >>> c.flops == 2 * 512 * 1024 * 256, c.bytes == 2 * (512*1024 + 1024*256 + 512*256)
    (True, True)
    >>> c.precision
    'bf16'
    """
    if not args or name not in ESTIMATED_OPS:
        return None
    shapes, types = _shapes(args)
    found = _cost(name, shapes)
    if found is None or found[0] <= 0:
        return None
    flops, out, read = found
    first = next((types[i] for i in read if i < len(shapes) and shapes[i]), "float")
    size = DTYPE_BYTES.get(first, 4)
    elements = sum(prod(shapes[i]) for i in read if i < len(shapes) and shapes[i]) + (
        prod(out) if out else 0
    )
    return OpCost(flops=flops, bytes=float(elements * size), precision=_precision(first))

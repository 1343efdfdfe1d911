"""Readable units and kernel names for the dashboard; pure, so pages and figures agree.

Public surface: `format_duration_ns`, `duration_unit`, `format_bytes`, `format_bandwidth`,
`format_count`, `format_pct`, `format_timestamp`, `format_flops`, `format_flop_rate`,
`format_value`, `device_label`, `precision_label`, `shorten_kernel_name`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

__all__ = [
    "device_label",
    "duration_unit",
    "format_bandwidth",
    "format_bytes",
    "format_count",
    "format_duration_ns",
    "format_flop_rate",
    "format_flops",
    "format_pct",
    "format_timestamp",
    "format_value",
    "precision_label",
    "shorten_kernel_name",
]

MISSING = "—"
_DURATION_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3))
_TIME_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
# Decimal (SI) prefixes, so that "KB" means 1000 bytes, as the label says.
_BYTE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3))
_IDENT = re.compile(r"[A-Za-z_]\w*")
# Template arguments that say nothing about what a kernel does.
_UNINFORMATIVE = frozenset(
    {"bool", "char", "double", "false", "float", "half", "int", "long", "short", "signed"}
    | {"true", "unsigned", "void"}
)
_OPEN = {"<": ">", "(": ")", "{": "}", "[": "]"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def _three_digits(value: float) -> str:
    """Three significant digits, the precision a glance at a profile needs."""
    size = abs(value)
    decimals = 2 if size < 9.995 else 1 if size < 99.95 else 0
    return f"{value:.{decimals}f}"


def duration_unit(ns: float) -> tuple[str, float]:
    """The unit `format_duration_ns` writes `ns` in, and its size in ns: an axis scaled by
    its largest value then reads `-200 ms`, as the cells beside it, never `-200k µs`.

    >>> duration_unit(4_561_000), duration_unit(-200_000_000), duration_unit(999_999)
    (('ms', 1000000.0), ('ms', 1000000.0), ('ms', 1000000.0))
    >>> duration_unit(812), duration_unit(0)
    (('ns', 1.0), ('ns', 1.0))
    """
    for unit, scale in _DURATION_UNITS:
        if round(abs(ns) * 1000 / scale) >= 1000:
            return unit, scale
    return "ns", 1.0


def format_duration_ns(ns: float | None) -> str:
    """A duration in the largest unit that keeps it at or above 1.

    >>> format_duration_ns(812)
    '812 ns'
    >>> format_duration_ns(12_345)
    '12.3 µs'
    >>> format_duration_ns(4_561_000)
    '4.56 ms'
    >>> format_duration_ns(1_234_000_000)
    '1.23 s'
    >>> format_duration_ns(999_999)
    '1.00 ms'
    >>> format_duration_ns(None), format_duration_ns(-200_000_000)
    ('—', '-200 ms')
    """
    if ns is None:
        return MISSING
    unit, scale = duration_unit(ns)  # after rounding: 999.9 µs reads "1.00 ms", not "1000 µs"
    return f"{_three_digits(ns / scale)} {unit}" if scale > 1 else f"{ns:.0f} ns"


def _scaled(value: float, units: tuple[tuple[str, float], ...], base: str) -> str:
    for unit, scale in units:
        if abs(value) >= scale * 0.9995:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} {base}"


def format_bytes(n: float | None) -> str:
    """A size with one decimal in decimal (SI) units.

    >>> format_bytes(15_000)
    '15.0 KB'
    >>> format_bytes(1_234_567_890)
    '1.2 GB'
    >>> format_bytes(512)
    '512 B'
    """
    return MISSING if n is None else _scaled(n, _BYTE_UNITS, "B")


def format_bandwidth(bytes_per_s: float | None) -> str:
    """A transfer rate, in the GB/s that GPU memory and links are quoted in.

    >>> format_bandwidth(4.8e12)
    '4.8 TB/s'
    >>> format_bandwidth(25.3e9)
    '25.3 GB/s'
    >>> format_bandwidth(2_000)
    '2.0 KB/s'
    """
    if bytes_per_s is None:
        return MISSING
    return _scaled(bytes_per_s, tuple((f"{u}/s", s) for u, s in _BYTE_UNITS), "B/s")


_FLOP_UNITS = (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3))


def format_flops(n: float | None) -> str:
    """An amount of floating-point work.

    >>> format_flops(805_306_368)
    '805.3 MFLOP'
    >>> format_flops(2.1e12)
    '2.1 TFLOP'
    """
    return MISSING if n is None else _scaled(n, _FLOP_UNITS, "FLOP")


def format_flop_rate(flops_per_s: float | None) -> str:
    """Achieved or peak compute, in the TFLOP/s that datasheets quote.

    >>> format_flop_rate(989.5e12)
    '989.5 TFLOP/s'
    >>> format_flop_rate(20.04e12)
    '20.0 TFLOP/s'
    >>> format_flop_rate(3.2e9)
    '3.2 GFLOP/s'
    """
    if flops_per_s is None:
        return MISSING
    return _scaled(flops_per_s, tuple((f"{u}/s", s) for u, s in _FLOP_UNITS), "FLOP/s")


def format_count(n: int | None) -> str:
    """An integer with thousands separators.

    >>> format_count(1234567)
    '1,234,567'
    """
    return MISSING if n is None else f"{n:,}"


def format_pct(pct: float | None) -> str:
    """A percentage with one decimal.

    >>> format_pct(16.014)
    '16.0%'
    """
    return MISSING if pct is None else f"{pct:.1f}%"


def format_value(value: float | None, unit: str = "") -> str:
    """Any metric value with its unit, in the same units as every other figure: bytes,
    durations, rates and shares through the functions above; other units and plain numbers
    with thousands separators and no exponent for everyday sizes.

    >>> format_value(4_143_000_000, "B"), format_value(4_143_000_000), format_value(11.94, "ms")
    ('4.1 GB', '4,143,000,000', '11.9 ms')
    >>> format_value(283027.1, "1/s"), format_value(35.5, "%"), format_value(None, "ms")
    ('283,027 /s', '35.5%', '—')
    >>> format_value(0.000123), format_value(2.5e18, "FLOP/s")
    ('0.000123', '2.5e+18 FLOP/s')
    """
    if value is None:
        return MISSING
    unit = unit.strip()
    by_unit = {"B": format_bytes, "bytes": format_bytes, "B/s": format_bandwidth,
               "FLOP": format_flops, "%": format_pct}  # fmt: skip
    if unit in by_unit:
        return by_unit[unit](value)
    if unit in _TIME_NS:
        return format_duration_ns(value * _TIME_NS[unit])
    if unit == "FLOP/s" and value < 1e18:
        return format_flop_rate(value)
    if unit == "1/s":
        return f"{value:,.0f} /s"
    if 1e4 <= abs(value) < 1e16:
        text = f"{value:,.0f}"
    elif value == 0 or 1e-3 <= abs(value) < 1e4:
        text = f"{value:.4g}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def device_label(device: Mapping[str, object]) -> str:
    """A GPU as `GPU 0: NVIDIA H200`, led by its rank in a multi-rank trace, so that the
    two GPU 0s of a two-rank job read apart.

    >>> device_label({"index": 1, "name": "NVIDIA H200", "rank": 3})
    'rank 3 · GPU 1: NVIDIA H200'
    >>> device_label({"index": 0, "name": ""})
    'GPU 0: unnamed device'
    """
    name = device.get("name") or "unnamed device"
    text = f"GPU {device.get('index', '?')}: {name}"
    rank = device.get("rank")
    return f"rank {rank} · {text}" if isinstance(rank, int) else text


# Roof precisions (backend gpu_specs keys and ncu's) as readers know them.
_PRECISIONS = {"fp16_tensor": "fp16/bf16 tensor", "tf32_tensor": "tf32 tensor",
               "fp8_tensor": "fp8 tensor", "fp64_tensor": "fp64 tensor",
               "tensor": "bf16 tensor", "fp16": "fp16 (no tensor cores)"}  # fmt: skip


def precision_label(precision: str) -> str:
    """A roof's precision as a label.

    >>> precision_label("fp16_tensor"), precision_label("fp32")
    ('fp16/bf16 tensor', 'fp32')
    """
    return _PRECISIONS.get(precision, precision)


def format_timestamp(iso: str | None) -> str:
    """An API timestamp in UTC to the second, the same for every viewer.

    >>> format_timestamp("2026-03-01T12:34:56.789+01:00")
    '2026-03-01 11:34:56 UTC'
    >>> format_timestamp("not a date")
    'not a date'
    """
    if not iso:
        return MISSING
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _groups(name: str) -> list[tuple[str, str]] | None:
    """Top-level pieces: ("text", s), ("<", inner), ("(", inner)...; None if unbalanced."""
    pieces: list[tuple[str, str]] = []
    stack: list[str] = []
    start = 0
    for i, ch in enumerate(name):
        if ch in _OPEN:
            if not stack:
                pieces.append(("text", name[start:i]))
                start = i + 1
            stack.append(ch)
        elif ch in _CLOSE:
            if not stack or stack[-1] != _CLOSE[ch]:
                return None
            stack.pop()
            if not stack:
                pieces.append((_CLOSE[ch], name[start:i]))
                start = i + 1
    if stack:
        return None
    pieces.append(("text", name[start:]))
    return pieces


def _split_args(inner: str) -> list[str]:
    """Template arguments split on top-level commas."""
    args, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += (ch in _OPEN) - (ch in _CLOSE)
        if ch == "," and depth == 0:
            args.append(inner[start:i].strip())
            start = i + 1
    args.append(inner[start:].strip())
    return args


def _template_hint(inner: str) -> str | None:
    """The first template argument that names something (a functor, an op), unqualified."""
    for arg in _split_args(inner):
        head = re.split(r"[<({]", arg, maxsplit=1)[0].strip()
        if head.startswith("std::"):
            continue
        last = head.rsplit("::", 1)[-1]
        if _IDENT.fullmatch(last) and last not in _UNINFORMATIVE:
            return last
    return None


def _collapse(name: str) -> str:
    pieces = _groups(name)
    if pieces is None:
        return name
    out: list[str] = []
    for kind, text in pieces:
        if kind == "text":
            out.append(text)
        elif kind == "<":
            hint = _template_hint(text)
            many = len(_split_args(text)) > 1
            out.append(f"<{hint}, …>" if hint and many else f"<{hint or '…'}>")
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _truncate(text: str, max_len: int) -> str:
    """Cut the middle, because kernel families differ at the end (`…_split_k_kernel`)."""
    if len(text) <= max_len:
        return text
    head = (max_len - 1) * 3 // 5
    tail = max_len - 1 - head
    return f"{text[:head]}…{text[-tail:] if tail else ''}"


def shorten_kernel_name(name: str, max_len: int = 60) -> str:
    """A demangled kernel name cut to what identifies it in a chart label.

    Drops `void `, namespaces and parameter lists, and collapses template arguments to
    `<…>`, keeping the first argument that names a functor as a hint, because that is
    what tells the many `elementwise_kernel`s apart. The full name belongs in a tooltip.

    >>> shorten_kernel_name("void at::native::vectorized_elementwise_kernel<4, "
    ...     "at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
    ...     "at::native::FillFunctor<float>, std::array<char*, 1ul>)")
    'vectorized_elementwise_kernel<FillFunctor, …>'
    >>> shorten_kernel_name("void (anonymous namespace)::softmax_warp_forward<float, "
    ...     "float, float, 10, false>(float*, float const*, int)")
    'softmax_warp_forward<…>'
    >>> shorten_kernel_name("ampere_sgemm_128x64_tn")
    'ampere_sgemm_128x64_tn'
    >>> shorten_kernel_name("sm80_xmma_gemm_f32f32_tilesize64x64x8_execute_split_k_kernel", 40)
    'sm80_xmma_gemm_f32f32_t…e_split_k_kernel'
    """
    text = name.strip().removeprefix("void ")
    prefix, sep, rest = _collapse(text).partition("<")
    return _truncate(prefix.rsplit("::", 1)[-1] + sep + rest, max_len)

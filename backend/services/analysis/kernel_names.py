"""Kernel-name keys that match the same kernel across tools.

torch.profiler and nsys's demangled names are full C++ signatures (`void ns::k<4,
F>(int, F)`), nsys's short names and Nsight Compute's default are the bare function
(`k`), and rocprof appends ` [clone .kd]` or `.kd`. `exact_key` removes only what differs
by tool for the *same* instantiation (whitespace, `void `, the clone suffix); `base_key`
keeps just the unqualified function name, which is what a short name is.

Public surface: `exact_key`, `base_key`.
"""

import re

_SPACES = re.compile(r"\s+")
_CLONE = re.compile(r"\s*\[clone [^\]]*\]$|\.kd$")
_OPEN, _CLOSE = "<([{", ">)]}"


def exact_key(name: str) -> str:
    """The name with tool-specific decoration removed.

    >>> exact_key("void  at::native::k<4>(int) [clone .kd]")
    'at::native::k<4>(int)'
    """
    text = _CLONE.sub("", _SPACES.sub(" ", name.strip()))
    return text.removeprefix("void ").strip()


def _top_level(text: str) -> str:
    """The text outside any brackets, so `a<b::c>::d(e)` reads `a::d`."""
    out, depth = [], 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def base_key(name: str) -> str:
    """The unqualified function name, as a short name would print it.

    >>> base_key("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor"
    ...          "<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>)")
    'vectorized_elementwise_kernel'
    >>> base_key("void (anonymous namespace)::softmax_warp_forward<float>(float*)")
    'softmax_warp_forward'
    >>> base_key("ampere_sgemm_128x64_tn")
    'ampere_sgemm_128x64_tn'
    """
    text = _top_level(exact_key(name)).strip()
    return text.rsplit("::", 1)[-1].strip() or exact_key(name)

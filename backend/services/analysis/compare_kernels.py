"""Which kernels of trace A are which kernels of trace B.

Three passes, each over what the one before left: the same instantiation (`exact_key`,
whatever tool printed it), then the same name with template arguments and namespaces
stripped (`base_key`, so a torch trace's full signature meets an nsys short name and a
re-templated kernel meets its old self), then the same launching CPU op (the op that spent
the most time on the kernel), so a kernel renamed outright is still paired with the one it
replaced. Several names that match as one are compared as their sum and listed. What is
left is new (only in B) or gone (only in A), one row per kernel, never a shared bucket.

Public surface: `match_kernels`, `KernelMatch`, `KernelRow`.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from backend.services.analysis.kernel_names import base_key, exact_key

KernelRow = tuple[str, int, int]  # (name, launches, total ns) of one trace


@dataclass(slots=True)
class _Side:
    """Launches and time of one or more kernel names of one trace."""

    names: list[str] = field(default_factory=list)
    count: int = 0
    total_ns: int = 0

    def add(self, other: "_Side") -> None:
        self.names += other.names
        self.count += other.count
        self.total_ns += other.total_ns


@dataclass(frozen=True, slots=True)
class KernelMatch:
    """A row of the comparison: what A and B spent on it, and how it was matched."""

    key: str
    match: str  # "exact", "name", "op"; "none" for new and gone rows
    a: _Side
    b: _Side
    op: str | None = None

    @property
    def status(self) -> str:
        """ "changed" when both traces have it, else "new" (only B) or "gone" (only A)."""
        return "changed" if self.a.names and self.b.names else "new" if self.b.names else "gone"

    @property
    def name(self) -> str:
        """The one name both sides share, else the key the names were matched by."""
        names = set(self.a.names + self.b.names)
        return names.pop() if len(names) == 1 else self.key


def _group(sides: Iterable[_Side], key: Callable[[str], str | None]) -> dict[str, _Side]:
    out: dict[str, _Side] = defaultdict(_Side)
    for side in sides:
        k = key(side.names[0])
        if k is not None:
            out[k].add(side)
    return out


Key = Callable[[str], str | None]


def _pass(
    a: dict[str, _Side], b: dict[str, _Side], key_a: Key, key_b: Key, match: str
) -> tuple[list[KernelMatch], dict[str, _Side], dict[str, _Side]]:
    """Match what is left by its key; return the matches and what is still unmatched."""
    ga, gb = _group(a.values(), key_a), _group(b.values(), key_b)
    both = ga.keys() & gb.keys()
    op = match == "op"
    found = [KernelMatch(k, match, ga[k], gb[k], k if op else None) for k in sorted(both)]
    matched_a = {n for k in both for n in ga[k].names}
    matched_b = {n for k in both for n in gb[k].names}
    rest_a = {k: s for k, s in a.items() if s.names[0] not in matched_a}
    rest_b = {k: s for k, s in b.items() if s.names[0] not in matched_b}
    return found, rest_a, rest_b


def match_kernels(
    a: Iterable[KernelRow],
    b: Iterable[KernelRow],
    ops_a: Mapping[str, str] | None = None,
    ops_b: Mapping[str, str] | None = None,
) -> list[KernelMatch]:
    """Match the kernel rows of A and B.

    Args:
        a, b: (name, launches, total ns) per kernel name.
        ops_a, ops_b: kernel name -> the CPU op that launched it; names missing here (or
            traces without launch correlation) skip the third pass.

    Returns:
        Every row, matched, new and gone, in no particular order.
    """
    ea = _group((_Side([n], c, t) for n, c, t in a), exact_key)
    eb = _group((_Side([n], c, t) for n, c, t in b), exact_key)
    exact, ra, rb = _pass(ea, eb, exact_key, exact_key, "exact")
    by_name, ra, rb = _pass(ra, rb, base_key, base_key, "name")
    oa, ob = ops_a or {}, ops_b or {}
    by_op, ra, rb = _pass(ra, rb, oa.get, ob.get, "op")
    gone = [KernelMatch(k, "none", s, _Side()) for k, s in ra.items()]
    new = [KernelMatch(k, "none", _Side(), s) for k, s in rb.items()]
    return [*exact, *by_name, *by_op, *new, *gone]

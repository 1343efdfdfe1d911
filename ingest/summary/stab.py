"""Which range encloses a time: the innermost of a thread's ranges, for many times at once.

A thread's ranges, in push order (start ascending, then end descending, then index: an
enclosing range before what it encloses), behave like a call stack swept in time: at time
t the innermost open range is the last one in push order that started at or before t and
ends after it. That is "the last position <= p with end > t", p the last range started by
t: a binary search over suffixes of the positions, each step a range maximum read from a
max segment tree, all queries in lockstep (numpy), so the cost is O((n + q) log^2 n) array
work with no Python per range or query.

Public surface: `Stack`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

_LOWEST = np.iinfo(np.int64).min


class Stack:
    """Ranges of several threads (`thread[i]` in 0..threads-1), ready for `innermost`."""

    def __init__(
        self,
        starts: NDArray[np.int64],
        ends: NDArray[np.int64],
        thread: NDArray[np.int64],
        threads: int,
    ) -> None:
        n = len(starts)
        self.order = np.lexsort((np.arange(n), -ends, starts, thread))
        self.starts, self.ends = starts[self.order], ends[self.order]
        self.bounds = np.searchsorted(thread[self.order], np.arange(threads + 1))
        size = 1 << max(n - 1, 0).bit_length()
        tree = np.full(2 * size, _LOWEST, dtype=np.int64)
        tree[size : size + n] = self.ends
        level = size
        while level > 1:
            tree[level // 2 : level] = np.maximum(
                tree[level : 2 * level : 2], tree[level + 1 : 2 * level : 2]
            )
            level //= 2
        self._tree, self._size = tree, size

    def innermost(self, thread: NDArray[np.int64], times: NDArray[np.int64]) -> NDArray[np.int64]:
        """Per query, the index (into the columns given) of the innermost range of its
        thread open at its time (start <= time < end), or -1."""
        out = np.full(len(times), -1, dtype=np.int64)
        if not len(self.ends):
            return out
        lo = self.bounds[thread]
        last = np.empty(len(times), dtype=np.int64)  # one past the last range started by then
        for t in np.unique(thread).tolist():
            mine = thread == t
            a, b = self.bounds[t], self.bounds[t + 1]
            last[mine] = a + np.searchsorted(self.starts[a:b], times[mine], side="right")
        # smallest l with max(ends[l:last]) <= time; most often l = last (the range started
        # last is still open: a call inside the op that launched it), settled at once
        low = last.copy()
        on_top = (last > lo) & (self.ends[np.maximum(last - 1, 0)] > times)
        deeper = np.flatnonzero((last > lo) & ~on_top)
        low[deeper] = self._search(lo[deeper], last[deeper], times[deeper])
        found = low > lo
        out[found] = self.order[low[found] - 1]
        return out

    def _search(
        self, low: NDArray[np.int64], last: NDArray[np.int64], times: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Binary search, per query, of the smallest l in [low, last] with every end in
        [l, last) at or before its time."""
        high = last.copy()
        while True:
            open_ = low < high
            if not open_.any():
                return low
            mid = (low + high) // 2
            closed = self._max(mid, last) <= times
            high = np.where(open_ & closed, mid, high)
            low = np.where(open_ & ~closed, mid + 1, low)

    def _max(self, left: NDArray[np.int64], right: NDArray[np.int64]) -> NDArray[np.int64]:
        """Maximum end over positions [left, right) per query (the lowest int64 if empty)."""
        tree = self._tree
        best = np.full(len(left), _LOWEST, dtype=np.int64)
        lo, hi = left + self._size, right + self._size
        while True:
            live = lo < hi
            if not live.any():
                return best
            take = live & (lo & 1 == 1)
            best[take] = np.maximum(best[take], tree[lo[take]])
            lo = lo + take
            take = live & (hi & 1 == 1)
            hi = hi - take
            best[take] = np.maximum(best[take], tree[hi[take]])
            lo, hi = lo >> 1, hi >> 1

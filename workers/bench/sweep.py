"""Parameter sweeps: the cartesian product of the swept values over the fixed params."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any


def expand_sweep(
    params: Mapping[str, Any], sweep: Mapping[str, Sequence[Any]]
) -> list[dict[str, Any]]:
    """One params dict per combination, in a stable order (the sweep's key order).

    >>> expand_sweep({"dtype": "bf16"}, {"b": [1, 8], "s": [512]})
    [{'dtype': 'bf16', 'b': 1, 's': 512}, {'dtype': 'bf16', 'b': 8, 's': 512}]
    >>> expand_sweep({"n": 4}, {})
    [{'n': 4}]
    """
    keys = list(sweep)
    combos = itertools.product(*(list(sweep[k]) for k in keys))
    return [{**params, **dict(zip(keys, values, strict=True))} for values in combos]


def point_label(point: Mapping[str, Any], swept: Sequence[str]) -> str:
    """The swept values of one point, e.g. `b=8,s=512`; empty when nothing is swept.

    >>> point_label({"dtype": "bf16", "b": 8, "s": 512}, ["b", "s"])
    'b=8,s=512'
    """
    return ",".join(f"{k}={point[k]}" for k in swept)

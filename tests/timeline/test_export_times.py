"""The export's µs text for integer ns, against Python's exact decimal arithmetic, across
the fast DECIMAL path and the text path for values past 18 digits."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from backend.services.traces.chrome_export import _text
from backend.services.traces.chrome_lines import _us

VALUES = [
    0, 1, 5, -5, 999, 1000, -1500, 123_456_789, 1_795_966_347_341_451_000,
    10**18 - 1, -(10**18 - 1), 10**18, -(10**18), 2**63 - 1, -(2**63 - 1),
]  # fmt: skip


@pytest.mark.parametrize("ns", VALUES)
def test_microseconds_are_exact_to_the_ns(ns: int) -> None:
    with duckdb.connect() as con:
        rows = con.execute(f"SELECT {_us('x')} FROM (SELECT {ns}::BIGINT AS x)").fetchall()
    assert rows == [(f"{Decimal(ns) / 1000:.3f}",)]


LINES = [',{"a":1}', ',{"b":"é"}', ",{}", ',{"c":[1,2]}']


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view"])
@pytest.mark.parametrize(("start", "stop"), [(0, 4), (1, 3), (3, 4), (2, 2)])
def test_a_batch_text_is_its_lines_back_to_back(kind: str, start: int, stop: int) -> None:
    """Whatever string layout DuckDB hands over, and on a slice of it."""
    if not hasattr(pa, kind):
        pytest.skip(f"pyarrow {pa.__version__} has no {kind}")
    lines = pa.array(LINES, getattr(pa, kind)())[start:stop]
    assert _text(lines) == "".join(LINES[start:stop]).encode()

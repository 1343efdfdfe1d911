"""DuckDB result values as JSON values.

Integers stay integers however large (a sum of durations is a HUGEINT; Python's JSON
writes it exactly). Everything JSON has no number or text for is turned into one, so a
response never fails to serialise half-way.

Public surface: `to_json_value`.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any


def to_json_value(value: Any) -> Any:
    """One value from a DuckDB row, as something `json.dumps` writes.

    >>> to_json_value(float("nan")), to_json_value(Decimal("1.50")), to_json_value(b"\\x01")
    (None, 1.5, '01')
    >>> to_json_value({"a": [dt.date(2026, 12, 2)], 3: None})
    {'a': ['2026-12-02'], '3': None}
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return to_json_value(float(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, (dt.timedelta, uuid.UUID)):
        return str(value)
    return str(value)

"""Problems with a metrics document, collected with their JSON paths (pure code).

Every problem is kept with its path (``$.points[3].samples[1]``) so a CI job sees all its
mistakes at once (packaging's ``_ErrorCollector``), and `MetricDocumentError` carries
them to the API, which answers 422 with the list.

Public surface: `Problem`, `MetricDocumentError`, `ProblemCollector`, `MAX_SAMPLES`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_SAMPLES = 100_000


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a document, and where (a JSON path)."""

    path: str
    message: str


class MetricDocumentError(ValueError):
    """The document cannot be stored; `problems` says what and where."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        shown = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{len(problems)} problem(s): {shown}{more}")


class ProblemCollector:
    """Collects problems instead of stopping at the first (packaging's _ErrorCollector)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def number(self, raw: Any, path: str) -> float | None:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            self.add(path, f"expected a number, got {type(raw).__name__}")
            return None
        try:
            value = float(raw)
        except OverflowError:  # a JSON integer too long for a float
            value = math.inf
        if not math.isfinite(value):
            self.add(path, "expected a finite number")
            return None
        return value

    def storable(self, raw: Any, path: str) -> bool:
        """Whether every string in `raw` (keys too) can be stored: UTF-8, no NUL.

        JSON's ``"\\ud800"`` decodes to a lone surrogate, which no encoder writes.
        """
        if isinstance(raw, str):
            if "\0" in raw:
                self.add(path, "contains a NUL character")
                return False
            try:
                raw.encode()
            except UnicodeEncodeError:
                self.add(path, "contains a lone surrogate (not valid Unicode)")
                return False
            return True
        if isinstance(raw, dict):
            # Not all(): every bad string is reported. A bad key is shown escaped (repr).
            ok = [self.storable(k, f"{path}[{k!r}]") and self.storable(v, f"{path}.{k}")
                  for k, v in raw.items()]  # fmt: skip
            return all(ok)
        if isinstance(raw, list):
            return all([self.storable(v, f"{path}[{i}]") for i, v in enumerate(raw)])
        return True

    def text(self, obj: dict[str, Any], key: str, path: str, *, required: bool = False) -> str:
        raw = obj.get(key)
        if raw is None:
            if required:
                self.add(f"{path}.{key}", "is required")
            return ""
        if not isinstance(raw, str | int) or isinstance(raw, bool):
            self.add(f"{path}.{key}", f"expected a string, got {type(raw).__name__}")
            return ""
        if isinstance(raw, int) and raw.bit_length() > 64:
            self.add(f"{path}.{key}", "expected a string, got a very long integer")
            return ""
        text = str(raw)
        return text if self.storable(text, f"{path}.{key}") else ""

    def numbers(self, raw: Any, path: str) -> list[float] | None:
        if not isinstance(raw, list) or not raw:
            self.add(path, "expected a non-empty list of numbers")
            return None
        if len(raw) > MAX_SAMPLES:
            self.add(path, f"{len(raw)} samples, the limit is {MAX_SAMPLES}")
            return None
        out = [self.number(v, f"{path}[{i}]") for i, v in enumerate(raw)]
        return None if any(v is None for v in out) else [v for v in out if v is not None]

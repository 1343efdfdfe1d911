"""`RunRequest`: everything the runner subprocess needs, as one JSON document.

The Celery task builds it from the stored spec and run rows and writes it to a file;
`python -m workers.bench.run` reads it. Keeping it JSON keeps torch out of the task.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

Kind = Literal["builtin", "callable", "command"]
Determinism = Literal["strict", "warn", "off"]


@dataclass(frozen=True)
class RunRequest:
    """One benchmark run: a workload, its params and sweep, and how to measure it."""

    run_id: str
    name: str
    kind: Kind
    workload: str
    params: dict[str, Any] = field(default_factory=dict)
    sweep: dict[str, list[Any]] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    output_file: str | None = None
    seed: int = 0
    warmup: int = 5
    iters: int = 20
    profile: bool = False
    device: str = "auto"
    deterministic: Determinism = "warn"
    spec_hash: str = ""
    timeout_s: int = 1800
    # The GPU guard (issue #22): `settle` options (None: off) and the `low_clock` threshold;
    # the evidence a clocks-event reason needs (issue #37).
    settle: dict[str, Any] | None = None
    min_clock_fraction: float = 0.9
    throttle_min_samples: int = 5
    throttle_min_share: float = 0.1
    # The spec's own variables, on top of the runner's allow-list (`workers.bench.environment`).
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> RunRequest:
        """Load a request written by `write`."""
        return cls(**json.loads(path.read_text()))

    def write(self, path: Path) -> None:
        """Store the request as JSON for the runner subprocess."""
        path.write_text(json.dumps(asdict(self), sort_keys=True))

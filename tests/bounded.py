"""Run one hostile input in a fresh Python and measure what it cost there.

The cost is measured in a child process so it is that input's alone, not the test
process's history: its peak resident memory (VmHWM) and its CPU time (user plus system),
never wall-clock, so a loaded machine makes no bound flaky. A child still running
at `timeout_s` is killed and reported as not finished (the cost then exceeds any bound).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20


@dataclass(frozen=True)
class Cost:
    finished: bool
    peak_bytes: int
    cpu_s: float
    output: str  # what the code printed: its answer, or the refusal's text

    def within(self, *, peak_mb: int, cpu_s: float) -> bool:
        return self.finished and self.peak_bytes < peak_mb * MB and self.cpu_s < cpu_s


# VmHWM, not `ru_maxrss`: Linux carries the maximum over `execve`, so a child spawned by a
# 200 MB test process would report at least 200 MB; VmHWM is the new image's own peak.
_REPORT = """
import resource as _resource
_use = _resource.getrusage(_resource.RUSAGE_SELF)
with open("/proc/self/status") as _f:
    _peak = next(int(l.split()[1]) * 1024 for l in _f if l.startswith("VmHWM:"))
print("\\nCOST", _peak, _use.ru_utime + _use.ru_stime)
"""


def measure(code: str, *, timeout_s: float = 120.0, root: Path = ROOT) -> Cost:
    """Run `code` (a script's text) with `root` on the path; what it printed and cost.

    The script reports its own peak and CPU time when it ends, so the figures are this
    child's whatever else the test process ran before.
    """
    script = f"try:\n{textwrap.indent(textwrap.dedent(code), '    ')}\nfinally:\n"
    script += textwrap.indent(_REPORT, "    ")
    env = {**os.environ, "PYTHONPATH": str(root)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode()
        return Cost(False, 0, timeout_s, out)
    output, _, cost = done.stdout.rpartition("\nCOST ")
    if not cost:
        return Cost(False, 0, 0.0, done.stdout + done.stderr)
    peak, cpu = cost.split()
    return Cost(True, int(peak), float(cpu), output + done.stderr)

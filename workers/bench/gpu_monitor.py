"""What the GPU did while it was being timed: NVML sampled through every timed loop.

A `GpuMonitor` samples each GPU a run uses every `period_s` (20 ms by default) in a
thread, inside `window()` blocks the runner opens around each timed loop, plus one sample
as a window opens and one as it closes, so a 3 ms loop has two. Clocks read once after the
loop missed the H200 sitting at its 700 W cap (SwPowerCap, SM clock 70-79 % of max) for a
whole sustained GEMM; sampling through the loop is what catches it.

`state()` is `environment["gpu_state"]`: per GPU, the static facts (max clocks, the clock
lock inputs), min/median/max of each field, the share of samples per clocks-event reason,
foreign processes seen, and a compact series (capped at `SERIES_CAP` points, evenly
decimated) for the run page's chart. `evaluate()` (module `workers.bench.gpu_flags`) turns
it into flags. Torch-free: NVML (`pynvml`, from nvidia-ml-py) is the only dependency, and
it is optional: without it there is no monitor and no flags, never guessed values.

NVML refreshes most readings about every 100 ms (the H200 probe shows runs of five equal
20 ms samples) and its power reading is a trailing average, so a sample describes the
last ~0.1 s, not the instant.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PERIOD_S = 0.02
SERIES_CAP = 600
# Readings kept in memory per GPU; past it every other one is dropped (and from then on
# only every 2nd, 4th, ... is kept), so an hour on 8 GPUs stays a few MB. Counts, min,
# max and reason shares stay exact; medians come from the kept readings.
KEEP_ROWS = 20_000
FIELDS = ("sm_mhz", "mem_mhz", "power_w", "power_limit_w", "temp_c", "util_pct")
# Clocks-event (formerly "throttle") reason bits, as nvml.h and pynvml define them; the H200
# probe (perf/gpu_guard/results) recorded these values from nvidia-ml-py 13.
REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",  # also "user defined clocks": locked clocks
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}
# Reasons that mean the GPU ran slower than it could; idle, a clock setting, sync boost and
# the display clock are states, not slowdowns.
SLOWDOWNS = frozenset(
    ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake",
     "board_limit", "reliability")
)  # fmt: skip
SLOWDOWN_MASK = sum(bit for bit, name in REASON_BITS.items() if name in SLOWDOWNS)
# What makes a reason real (issue #37): the H200 reports SwPowerCap (0x4) in the first
# readings of a burst after idle at 100-160 W of its 700 W cap, a boost transition and not a
# cap. A reading backs `sw_power_cap` only at POWER_NEAR_LIMIT of the enforced limit or
# above (the sustained GEMM sat at 692 W), and the thermal reasons only within
# THERMAL_MARGIN_C of the slowdown temperature. A reading the GPU does not give (no power,
# no slowdown temperature) cannot contradict the reason, so it stands.
POWER_NEAR_LIMIT = 0.9
THERMAL_MARGIN_C = 10.0
_POWER_BIT = next(bit for bit, name in REASON_BITS.items() if name == "sw_power_cap")
_THERMAL_BITS = sum(b for b, n in REASON_BITS.items() if n in ("sw_thermal", "hw_thermal"))


def load_nvml() -> Any:
    """The initialised `pynvml` module, or None when it is missing or NVML will not start."""
    try:
        nvml = importlib.import_module("pynvml")  # nvidia-ml-py; optional, ships no stubs
    except ImportError:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # pynvml raises its own NVMLError family; no NVML means no GPU state
        return None
    return nvml


def decode_reasons(mask: int) -> list[str]:
    """Names of the set bits; an unknown bit is kept as its hex value.

    >>> decode_reasons(0x4), decode_reasons(0x1 | 0x40), decode_reasons(0x800)
    (['sw_power_cap'], ['gpu_idle', 'hw_thermal'], ['0x800'])
    """
    names = []
    for bit in range(32):
        if mask & (1 << bit):
            names.append(REASON_BITS.get(1 << bit, hex(1 << bit)))
    return names


def backed_mask(reading: dict[str, Any], slowdown_temp_c: float | None) -> int:
    """The slowdown bits of a reading that its own power and temperature bear out.

    >>> backed_mask({"reasons": 0x4, "power_w": 120.0, "power_limit_w": 700.0, "temp_c": 40}, 89)
    0
    >>> backed_mask({"reasons": 0x4, "power_w": 692.0, "power_limit_w": 700.0, "temp_c": 60}, 89)
    4
    >>> backed_mask({"reasons": 0x20, "power_w": None, "power_limit_w": None, "temp_c": 85}, 89)
    32
    """
    mask = (reading["reasons"] or 0) & SLOWDOWN_MASK
    power, limit, temp = reading["power_w"], reading["power_limit_w"], reading["temp_c"]
    if power is not None and limit and power < POWER_NEAR_LIMIT * limit:
        mask &= ~_POWER_BIT
    if temp is not None and slowdown_temp_c and temp < slowdown_temp_c - THERMAL_MARGIN_C:
        mask &= ~_THERMAL_BITS
    return mask


def _read(fn: Callable[..., Any], *args: Any) -> Any:
    """One NVML query; None when this GPU or driver does not answer it."""
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: the field is absent
        return None


def descendants(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """`pid` and every process below it (the runner's own ranks and commands)."""
    parents: dict[int, int] = {}
    for stat in proc.glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            text = stat.read_text()
            parents[int(text.split(" ", 1)[0])] = int(text.rsplit(")", 1)[1].split()[1])
    ours, grew = {pid}, True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in ours and child not in ours:
                ours.add(child)
                grew = True
    return ours


@dataclass
class _Gpu:
    index: int
    handle: Any
    static: dict[str, Any]
    rows: list[tuple[Any, ...]] = field(default_factory=list)  # (t, window, *FIELDS, reasons)
    foreign: set[int] = field(default_factory=set)
    count: int = 0
    stride: int = 1
    masks: Counter[int] = field(default_factory=Counter)
    backed: Counter[int] = field(default_factory=Counter)  # slowdown bits borne out
    # Foreign pids and the most SM/memory utilisation NVML gave each in a window (issue
    # #37: holding a context is not using the GPU); `process_util` False: NVML cannot say.
    use: dict[int, int] = field(default_factory=dict)
    since_us: int = 0
    process_util: bool | None = None
    low: dict[str, Any] = field(default_factory=dict)
    high: dict[str, Any] = field(default_factory=dict)

    def add(self, row: tuple[Any, ...], reading: dict[str, Any]) -> None:
        """Count a reading exactly; keep every `stride`-th for medians and the series."""
        self.count += 1
        if reading["reasons"] is not None:
            self.masks[reading["reasons"]] += 1
            self.backed[backed_mask(reading, self.static.get("slowdown_temp_c"))] += 1
        for name in FIELDS:
            value = reading[name]
            if value is not None:
                self.low[name] = min(value, self.low.get(name, value))
                self.high[name] = max(value, self.high.get(name, value))
        if (self.count - 1) % self.stride == 0:
            self.rows.append(row)
        if len(self.rows) > KEEP_ROWS:
            self.rows, self.stride = self.rows[::2], self.stride * 2


def static_facts(nvml: Any, handle: Any) -> dict[str, Any]:
    """What does not change during a run: name, max clocks and the clock-lock inputs."""
    name = _read(nvml.nvmlDeviceGetName, handle)
    pstate = _read(nvml.nvmlDeviceGetMinMaxClockOfPState, handle, nvml.NVML_CLOCK_SM, 0)
    return {
        "name": name.decode() if isinstance(name, bytes) else name,
        "sm_max_mhz": _read(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM),
        "mem_max_mhz": _read(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "app_clock_mhz": _read(nvml.nvmlDeviceGetApplicationsClock, handle, nvml.NVML_CLOCK_SM),
        "default_app_clock_mhz": _read(
            nvml.nvmlDeviceGetDefaultApplicationsClock, handle, nvml.NVML_CLOCK_SM
        ),
        "pstate0_sm_mhz": list(pstate) if pstate is not None else None,
        "slowdown_temp_c": _read(
            nvml.nvmlDeviceGetTemperatureThreshold,
            handle,
            nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
        ),
    }


class GpuMonitor:
    """Samples `gpus` (NVML indices) inside `window()` blocks; `state()` summarises them.

    `evaluate_only_busy` is for commands, which choose their GPUs themselves: every
    visible GPU is sampled, and flags consider only the GPUs that did work.
    """

    def __init__(
        self,
        nvml: Any,
        gpus: list[int],
        *,
        period_s: float = PERIOD_S,
        evaluate_only_busy: bool = False,
        own_pid: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nvml, self.period_s, self.clock = nvml, period_s, clock
        self.evaluate_only_busy = evaluate_only_busy
        self.own_pid = os.getpid() if own_pid is None else own_pid
        self.proc, self.host_pids = Path("/proc"), False
        self._ours: set[int] = {self.own_pid}
        self._not_ours: set[int] = set()
        self._gpus = []
        for index in gpus:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            self._gpus.append(_Gpu(index, handle, static_facts(nvml, handle)))
        self._reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        self._t0: float | None = None
        self._windows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _foreign(self, pids: list[int]) -> set[int]:
        """The pids of `pids` that are not the runner or its children.

        In a container NVML may report host pids, which this PID namespace cannot see.
        When none of the listed pids is ours and some are invisible, one invisible pid is
        taken to be the runner (which has a CUDA context on every GPU it times), so one
        process alone never reads as contention; `host_pids` in the state says so.
        """
        unknown = [p for p in pids if p not in self._ours]
        if set(unknown) - self._not_ours:  # a pid never seen: a new child (a rank, a command)?
            self._ours = descendants(self.own_pid)  # one /proc scan per new pid, not per sample
            self._not_ours |= {p for p in unknown if p not in self._ours}
        foreign = sorted(p for p in unknown if p not in self._ours)
        hidden = [p for p in foreign if not (self.proc / str(p)).exists()]
        if hidden and len(foreign) == len(pids):
            self.host_pids = True
            foreign.remove(hidden[0])
        return set(foreign)

    def read(self, gpu: _Gpu) -> dict[str, Any]:
        """One reading of every sampled field of `gpu` (None where NVML does not answer)."""
        n, h = self.nvml, gpu.handle
        sm = _read(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM)  # first: the fake NVML steps on it
        power = _read(n.nvmlDeviceGetPowerUsage, h)
        limit = _read(n.nvmlDeviceGetEnforcedPowerLimit, h)
        util = _read(n.nvmlDeviceGetUtilizationRates, h)
        procs = _read(n.nvmlDeviceGetComputeRunningProcesses, h) or []
        return {
            "sm_mhz": sm,
            "mem_mhz": _read(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
            "power_w": None if power is None else power / 1000,
            "power_limit_w": None if limit is None else limit / 1000,
            "temp_c": _read(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
            "util_pct": None if util is None else util.gpu,
            "reasons": _read(self._reasons_fn, h),
            "foreign_pids": sorted(self._foreign([int(p.pid) for p in procs])),
        }

    def _record_use(self, gpu: _Gpu, foreign: list[int]) -> None:
        """How much each foreign pid used the GPU since the last look (NVML's process
        utilisation samples: SM and memory-controller percent per pid and interval)."""
        for pid in foreign:
            gpu.use.setdefault(pid, 0)
        fn = getattr(self.nvml, "nvmlDeviceGetProcessUtilization", None)
        if fn is None or gpu.process_util is False:
            gpu.process_util = False
            return
        try:
            samples = fn(gpu.handle, gpu.since_us)
        except (
            Exception
        ) as e:  # NVMLError: NOT_FOUND is "no sample since", anything else "cannot say"
            if getattr(e, "value", None) != getattr(self.nvml, "NVML_ERROR_NOT_FOUND", 6):
                gpu.process_util = False
                return
            samples = []
        gpu.process_util = True
        for s in samples:
            gpu.since_us = max(gpu.since_us, int(s.timeStamp))
            pid = int(s.pid)
            if pid in gpu.use:
                gpu.use[pid] = max(gpu.use[pid], int(s.smUtil), int(s.memUtil))

    def read_all(self) -> list[dict[str, Any]]:
        """One reading per monitored GPU, with its index (settle uses these)."""
        return [{"gpu": g.index, **self.read(g)} for g in self._gpus]

    def limits(self) -> list[tuple[float | None, float | None]]:
        """Per GPU: the max SM clock (MHz) and the enforced power limit (W)."""
        return [(g.static["sm_max_mhz"], self.read(g)["power_limit_w"]) for g in self._gpus]

    def sample(self) -> None:
        """Record one reading of every GPU into the open window."""
        now = self.clock()
        if self._t0 is None:
            self._t0 = now
        window = len(self._windows) - 1
        for gpu in self._gpus:
            reading = self.read(gpu)
            gpu.foreign.update(reading["foreign_pids"])
            if reading["foreign_pids"]:
                self._record_use(gpu, reading["foreign_pids"])
            row = (round(now - self._t0, 4), window, *(reading[f] for f in FIELDS))
            with self._lock:
                gpu.add((*row, reading["reasons"]), reading)

    @contextlib.contextmanager
    def window(self, label: str = "") -> Iterator[None]:
        """Sample from entry to exit: once at each end and every `period_s` between."""
        self._windows.append({"label": label})
        for gpu in self._gpus:  # process utilisation counts from here, not from before
            gpu.since_us = max(gpu.since_us, int(time.time() * 1_000_000))
        self.sample()
        self._windows[-1]["start_s"] = self._rel(self.clock())
        stop = threading.Event()

        def loop() -> None:
            deadline = time.monotonic()
            while True:  # a fixed period; a slow reading (many GPUs) delays, never bunches
                deadline = max(deadline + self.period_s, time.monotonic())
                if stop.wait(max(0.0, deadline - time.monotonic())):
                    return
                self.sample()

        thread = threading.Thread(target=loop, name="perfdash-gpu-monitor", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self._windows[-1]["end_s"] = self._rel(self.clock())
            self.sample()

    def _rel(self, now: float) -> float:
        return round(now - (self._t0 if self._t0 is not None else now), 4)

    def state(self) -> dict[str, Any]:
        """`environment["gpu_state"]`: statics, summaries, reason shares and the series."""
        return {
            "period_ms": round(self.period_s * 1000, 3),
            "slowdown_mask": SLOWDOWN_MASK,  # which bits of `series.reasons` are slowdowns
            "host_pids": self.host_pids,
            "windows": self._windows,
            "gpus": [self._gpu_state(g) for g in self._gpus],
        }

    def _gpu_state(self, gpu: _Gpu) -> dict[str, Any]:
        with self._lock:
            rows, masks, count = list(gpu.rows), Counter(gpu.masks), gpu.count
            backed = Counter(gpu.backed)
        columns = list(zip(*rows, strict=True)) if rows else [()] * (len(FIELDS) + 3)
        by_field = dict(zip(("t_s", "window", *FIELDS, "reasons"), columns, strict=True))
        summary = {name: _summary(gpu, name, by_field[name]) for name in FIELDS}
        shares: Counter[str] = Counter()
        for mask, n in masks.items():
            for name in decode_reasons(mask):
                shares[name] += n
        total = sum(masks.values())
        borne: Counter[str] = Counter()
        for mask, n in backed.items():
            for name in decode_reasons(mask):
                borne[name] += n
        keep = _decimate(len(rows), SERIES_CAP)
        return {
            "index": gpu.index,
            **gpu.static,
            "samples": count,
            "evaluated": (gpu.high.get("util_pct") or 0) > 0 or not self.evaluate_only_busy,
            "summary": summary,
            "reasons": {k: round(v / total, 4) for k, v in sorted(shares.items())},
            "reasons_backed": {k: round(v / total, 4) for k, v in sorted(borne.items())},
            "foreign_pids": sorted(gpu.foreign),
            "foreign_use": {str(pid): pct for pid, pct in sorted(gpu.use.items())},
            "process_util": gpu.process_util,
            "series": {name: [values[i] for i in keep] for name, values in by_field.items()},
        }


def _summary(gpu: _Gpu, name: str, kept: tuple[Any, ...]) -> dict[str, float] | None:
    present = [v for v in kept if v is not None]
    if not present or name not in gpu.low:
        return None
    return {"min": gpu.low[name], "median": statistics.median(present), "max": gpu.high[name]}


def _decimate(n: int, cap: int) -> list[int]:
    """At most `cap` evenly spaced indices of `n`, first and last included.

    >>> _decimate(5, 10), _decimate(10, 4)
    ([0, 1, 2, 3, 4], [0, 3, 6, 9])
    """
    if n <= cap:
        return list(range(n))
    return [round(i * (n - 1) / (cap - 1)) for i in range(cap)]

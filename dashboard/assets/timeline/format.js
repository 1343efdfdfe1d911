// Durations and times as people read them in a profiler: 1.23 ms, 45.6 µs, 789 ns.

const UNITS = [
  [1e9, "s"],
  [1e6, "ms"],
  [1e3, "µs"],
];

/** A duration in ns, three significant digits. */
export function formatDuration(ns) {
  if (!Number.isFinite(ns)) return "–";
  const abs = Math.abs(ns);
  for (const [scale, unit] of UNITS) {
    if (abs >= scale) return `${trim(ns / scale)} ${unit}`;
  }
  return `${Math.round(ns)} ns`;
}

function trim(x) {
  const abs = Math.abs(x);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return x.toFixed(digits);
}

/** A count with thousands separators. */
export function formatCount(n) {
  return Math.round(n).toLocaleString("en-US");
}

/** Bytes as GiB/MiB/KiB. */
export function formatBytes(b) {
  if (b == null || !Number.isFinite(b)) return "–";
  const units = [
    [2 ** 30, "GiB"],
    [2 ** 20, "MiB"],
    [2 ** 10, "KiB"],
  ];
  for (const [scale, unit] of units) {
    if (Math.abs(b) >= scale) return `${trim(b / scale)} ${unit}`;
  }
  return `${Math.round(b)} B`;
}

/** Tick spacing for a time axis: 1, 2 or 5 times a power of ten, about `px` apart. */
export function tickStep(spanNs, widthPx, px = 110) {
  const raw = (spanNs * px) / Math.max(widthPx, 1);
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const m of [1, 2, 5, 10]) {
    if (m * pow >= raw) return m * pow;
  }
  return 10 * pow;
}

/** A tick label: the offset in the unit of its size, with the digits the step needs. */
export function formatTick(t, step) {
  const abs = Math.abs(t);
  const [scale, unit] = UNITS.find(([k]) => abs >= k) || [1, "ns"];
  const digits = Math.max(0, Math.min(6, Math.ceil(-Math.log10(step / scale) - 1e-9)));
  return `${(t / scale).toFixed(digits)} ${unit}`;
}

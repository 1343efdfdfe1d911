// Durations and times as people read them in a profiler: 1.23 ms, 45.6 µs, 789 ns; the
// durations and sizes themselves come from assets/units.js, shared with every page.

const UNITS = [
  [1e9, "s"],
  [1e6, "ms"],
  [1e3, "µs"],
];

/** A duration in ns, three significant digits, as every page writes it (assets/units.js). */
export function formatDuration(ns) {
  return window.perfdashUnits.formatDurationNs(ns);
}

/** A count with thousands separators. */
export function formatCount(n) {
  return Math.round(n).toLocaleString("en-US");
}

/** Bytes in decimal units with one decimal, as every page writes them (assets/units.js). */
export function formatBytes(b) {
  return window.perfdashUnits.formatBytes(b);
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

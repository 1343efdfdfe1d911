// Durations and sizes as every page writes them: the same text as dashboard/format.py's
// `format_duration_ns` and `format_bytes` (the unit chosen by magnitude; three significant
// digits for a time; one decimal and decimal units, KB = 1000 B, for a size). A classic
// script, so it has run before any page draws: grid cells call it by name through
// dash-ag-grid (`{"function": "formatDurationNs(params.value)"}`, components/grid.py),
// and the timeline and upload modules through `window.perfdashUnits`.
(function () {
  var MISSING = "\u2014";
  var DURATIONS = [["s", 1e9], ["ms", 1e6], ["\u00b5s", 1e3]];
  var BYTES = [["TB", 1e12], ["GB", 1e9], ["MB", 1e6], ["KB", 1e3]];

  function threeDigits(v) {
    var a = Math.abs(v);
    return v.toFixed(a < 9.995 ? 2 : a < 99.95 ? 1 : 0);
  }

  function formatDurationNs(ns) {
    if (ns === null || ns === undefined || !Number.isFinite(Number(ns))) return MISSING;
    ns = Number(ns);
    for (var i = 0; i < DURATIONS.length; i++) {
      // Compare after rounding, so 999.9 µs reads "1.00 ms" and never "1000 µs".
      if (Math.round((Math.abs(ns) * 1000) / DURATIONS[i][1]) >= 1000) {
        return threeDigits(ns / DURATIONS[i][1]) + " " + DURATIONS[i][0];
      }
    }
    return ns.toFixed(0) + " ns";
  }

  function formatBytes(n) {
    if (n === null || n === undefined || !Number.isFinite(Number(n))) return MISSING;
    n = Number(n);
    for (var i = 0; i < BYTES.length; i++) {
      if (Math.abs(n) >= BYTES[i][1] * 0.9995) return (n / BYTES[i][1]).toFixed(1) + " " + BYTES[i][0];
    }
    return n.toFixed(0) + " B";
  }

  window.perfdashUnits = { formatDurationNs: formatDurationNs, formatBytes: formatBytes, MISSING: MISSING };
  var grid = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});
  grid.formatDurationNs = formatDurationNs;
  grid.formatBytes = formatBytes;
})();

// What a GPU device did over the view, summed over its streams by category: drawn in the
// device's header row like Perfetto's summary of a process track, so a zoomed-out rank
// shows its compute/communication/copy mix, never one dominant colour.

export const SUMMARY_CATEGORIES = ["compute", "communication", "memcpy", "memset"];

function categoryIndex(category) {
  if (category === "compute") return 0;
  if (category === "communication") return 1;
  if (category.startsWith("memcpy")) return 2;
  if (category === "memset") return 3;
  return -1;
}

/**
 * Per device node: ns of each category in `buckets` equal slices of [vs, ve), from the
 * entry's items on the node's GPU lanes. A merged block spreads each category's ns evenly
 * over its extent (its mix says how much, not where); an event counts where it runs.
 * Returns Map(nodeId -> {buckets: Float64Array(4 * n), totals: [4 numbers]}).
 */
export function deviceSummaries(entry, devices, vs, ve, buckets) {
  const out = new Map();
  if (!entry) return out;
  const laneNode = new Map();
  for (const node of devices) {
    for (const lane of node.lanes) if (lane.family === "gpu") laneNode.set(lane.lane, node.id);
    out.set(node.id, { buckets: new Float64Array(4 * buckets), totals: [0, 0, 0, 0], width: (ve - vs) / buckets });
  }
  const catIndex = entry.categories.map(categoryIndex);
  const width = (ve - vs) / buckets;
  const share = [0, 0, 0, 0];
  for (let i = 0; i < entry.n; i++) {
    const nodeId = laneNode.get(entry.lane[i]);
    if (nodeId === undefined) continue;
    const a = entry.start_ns[i];
    const d = entry.dur_ns[i];
    const b = a + d;
    if (b <= vs || a >= ve || d <= 0) continue;
    const m = entry.mix;
    const mixed = m[4 * i] + m[4 * i + 1] + m[4 * i + 2] + m[4 * i + 3];
    if (mixed > 0) {
      for (let c = 0; c < 4; c++) share[c] = m[4 * i + c] / d;
    } else {
      const c0 = catIndex[entry.category[i]];
      if (c0 < 0) continue;
      share.fill(0);
      share[c0] = entry.id[i] >= 0 ? 1 : entry.busy_ns[i] / d;
    }
    const summary = out.get(nodeId);
    const lo = Math.max(a, vs);
    const hi = Math.min(b, ve);
    const first = Math.max(0, Math.floor((lo - vs) / width));
    const last = Math.min(buckets - 1, Math.floor((hi - vs) / width));
    for (let k = first; k <= last; k++) {
      const bs = vs + k * width;
      const overlap = Math.min(hi, bs + width) - Math.max(lo, bs);
      if (overlap <= 0) continue;
      for (let c = 0; c < 4; c++) {
        if (share[c] > 0) {
          const ns = share[c] * overlap;
          summary.buckets[4 * k + c] += ns;
          summary.totals[c] += ns;
        }
      }
    }
  }
  return out;
}

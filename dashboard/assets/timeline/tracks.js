// The track tree, as Perfetto and Nsight Systems show it: GPU work by rank → device →
// stream, CPU work by rank → process → thread, each node collapsible with its counts;
// and its layout into rows of pixels.

export const ROW_H = 18; // one nesting level of a lane
export const HEADER_H = 20; // a collapsible node's title row
export const DEVICE_HEADER_H = 28; // a GPU's title row, which holds its streams' summary
export const COUNTER_H = 34;
const LANE_PAD = 3;

function node(id, label, depth) {
  return { id, label, depth, children: [], lanes: [], counters: [], events: 0 };
}

function child(parent, id, label, device = null) {
  let found = parent.children.find((c) => c.id === id);
  if (!found) {
    found = node(id, label, parent.depth + 1);
    found.device = device !== null ? { device } : null;
    parent.children.push(found);
  }
  return found;
}

/** The short name of a lane under its node: "stream 7 · annotations", "thread 474". */
function shortLabel(lane) {
  const parts = lane.label.split(" · ");
  const keep = parts.filter((p) => !/^(rank \d+|GPU \d+|pid -?\d+)$/.test(p));
  return keep.join(" · ") || lane.label;
}

/** The tree of `lanes` (from `GET .../timeline/lanes`), in the API's display order. */
export function buildTree(lanes) {
  const ranks = new Set(lanes.map((l) => l.rank).filter((r) => r !== null));
  const multiRank = ranks.size > 1;
  const root = node("root", "", -1);
  const gpu = node("gpu", "GPU", 0);
  const cpu = node("cpu", "CPU", 0);
  for (const lane of lanes) {
    const top = lane.group === "gpu" ? gpu : cpu;
    let parent = top;
    if (multiRank && lane.rank !== null) {
      parent = child(parent, `${top.id}/r${lane.rank}`, `rank ${lane.rank}`);
    }
    parent =
      lane.group === "gpu"
        ? child(parent, `${parent.id}/d${lane.device}`, `GPU ${lane.device}`, lane.device)
        : child(parent, `${parent.id}/p${lane.pid}`, `process ${lane.pid}`);
    parent.lanes.push({ ...lane, short: shortLabel(lane) });
  }
  for (const top of [gpu, cpu]) {
    if (top.children.length) root.children.push(top);
  }
  countEvents(root);
  return root;
}

function countEvents(n) {
  n.events = n.lanes.reduce((s, l) => s + l.events, 0);
  n.laneCount = n.lanes.length;
  for (const c of n.children) {
    countEvents(c);
    n.events += c.events;
    n.laneCount += c.laneCount;
  }
}

/** Attach counter tracks (from `GET .../timeline/counters`) under their device's node. */
export function attachCounters(root, tracks) {
  const devices = [];
  (function walk(n) {
    if (/\/d-?\d+$/.test(n.id)) devices.push(n);
    n.children.forEach(walk);
  })(root);
  for (const n of devices) n.counters = [];
  for (const t of tracks) {
    const target = devices.find((n) => {
      const lane = n.lanes[0];
      return lane && lane.device === t.device && (t.rank === null || lane.rank === t.rank);
    });
    if (target && !target.counters.some((c) => c.key === t.key)) target.counters.push(t);
  }
}

/**
 * Rows top to bottom: node headers, counter tracks and lanes, skipping what a collapsed
 * node hides. `depths` maps lane id → rows it needs (its deepest nesting + 1).
 */
export function layoutRows(root, collapsed, depths) {
  const rows = [];
  let y = 0;
  const laneY = new Map();
  (function walk(n) {
    if (n.depth >= 0) {
      const h = n.device ? DEVICE_HEADER_H : HEADER_H;
      rows.push({ type: "header", node: n, y, h });
      y += h;
      if (collapsed.has(n.id)) return;
    }
    for (const c of n.counters || []) {
      rows.push({ type: "counter", counter: c, node: n, y, h: COUNTER_H });
      y += COUNTER_H;
    }
    for (const lane of n.lanes) {
      const levels = Math.max(1, depths.get(lane.lane) || 1);
      const h = levels * ROW_H + LANE_PAD * 2;
      rows.push({ type: "lane", lane, node: n, y, h, levels });
      laneY.set(lane.lane, y + LANE_PAD);
      y += h;
    }
    n.children.forEach(walk);
  })(root);
  return { rows, height: y, laneY };
}

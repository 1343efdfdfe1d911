// Drawing one frame on the canvas: the overview strip, the time ruler, the track shell on
// the left, and the tracks: counters, slices nested by depth with their names, merged
// blocks striped by what they hold, search matches, the area selection, flow arrows and
// the selected slice.

import { categoryColor, darkText, sliceColor } from "./colors.js";
import { formatBytes, formatCount, formatDuration, formatTick, tickStep } from "./format.js";
import { deviceSummaries } from "./summary.js";
import { ROW_H } from "./tracks.js";

export const SHELL_W = 260;
export const OVERVIEW_H = 30;
export const RULER_H = 24;
export const TOP_H = OVERVIEW_H + RULER_H;
const FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const MIX_CATEGORIES = ["compute", "communication", "memcpy", "memset"]; // a block's stripes
const LABEL_MIN_PX = 22;

/** Draw the frame; returns what was drawn: {slices, labels, flows}. */
export function draw(ctx, s) {
  const { width: W, height: H } = s;
  ctx.save();
  ctx.clearRect(0, 0, W, H);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const stats = { slices: 0, labels: 0, flows: 0, labelled: new Set() };
  drawTrackBackgrounds(ctx, s);
  ctx.save();
  ctx.beginPath();
  ctx.rect(SHELL_W, TOP_H, W - SHELL_W, H - TOP_H);
  ctx.clip();
  drawCounters(ctx, s);
  drawSummaries(ctx, s);
  if (s.entry) drawSlices(ctx, s, stats);
  drawArea(ctx, s);
  stats.flows = drawFlows(ctx, s);
  drawSelection(ctx, s);
  ctx.restore();
  drawShell(ctx, s);
  drawOverview(ctx, s);
  drawRuler(ctx, s);
  ctx.restore();
  return stats;
}

/** x of time offset `t` (ns) in the track area. */
export function xOf(s, t) {
  return SHELL_W + ((t - s.view.start) * (s.width - SHELL_W)) / (s.view.end - s.view.start);
}

/** Time offset (ns) at pixel x. */
export function tOf(s, x) {
  return s.view.start + ((x - SHELL_W) * (s.view.end - s.view.start)) / (s.width - SHELL_W);
}

function rowScreenY(s, row) {
  return row.y - s.scrollY + TOP_H;
}

function drawTrackBackgrounds(ctx, s) {
  let odd = false;
  for (const row of s.layout.rows) {
    const y = rowScreenY(s, row);
    if (y > s.height || y + row.h < TOP_H) {
      if (row.type === "lane") odd = !odd;
      continue;
    }
    if (row.type === "header") {
      ctx.fillStyle = "#eef1f5";
      ctx.fillRect(0, y, s.width, row.h);
      ctx.fillStyle = "#d5dae1";
      ctx.fillRect(0, y + row.h - 1, s.width, 1);
    } else {
      ctx.fillStyle = odd ? "#fafbfc" : "#ffffff";
      ctx.fillRect(0, y, s.width, row.h);
      if (row.type === "lane") odd = !odd;
    }
  }
}

function sliceLabel(entry, i, name) {
  if (entry.id[i] >= 0 || entry.count[i] <= 1) return name;
  return `${name} +${formatCount(entry.count[i] - 1)}`;
}

function drawSlices(ctx, s, stats) {
  const e = s.entry;
  const names = e.names;
  const cats = e.categories;
  const k = (s.width - SHELL_W) / (s.view.end - s.view.start);
  const vs = s.view.start;
  const left = SHELL_W;
  const right = s.width;
  const blocks = e.mode === "blocks";
  const matches = s.search ? s.search.nameMatches(e) : null;
  const lastPx = new Map(); // row -> last painted pixel, to skip sub-pixel overdraw
  const labels = [];
  for (let i = 0; i < e.n; i++) {
    const laneTop = s.layout.laneY.get(e.lane[i]);
    if (laneTop === undefined) continue;
    let x0 = left + (e.start_ns[i] - vs) * k;
    let x1 = x0 + e.dur_ns[i] * k;
    if (x1 < left || x0 > right) continue;
    const y = laneTop + e.depth[i] * ROW_H - s.scrollY + TOP_H;
    if (y + ROW_H < TOP_H || y > s.height) continue;
    if (x0 < left) x0 = left;
    if (x1 > right) x1 = right;
    const rowKey = e.lane[i] * 256 + e.depth[i];
    const px = Math.floor(x1);
    if (x1 - x0 < 1) {
      if (lastPx.get(rowKey) === px) continue;
      x1 = x0 + 1;
    }
    lastPx.set(rowKey, px);
    const name = names[e.name[i]];
    const cat = cats[e.category[i]];
    const dim = matches !== null && !matches[e.name[i]];
    ctx.globalAlpha = dim ? 0.22 : 1;
    const h = ROW_H - 2;
    if (blocks && drawMix(ctx, e, i, x0, y + 1, x1 - x0, h)) {
      // striped by its mix
    } else {
      ctx.fillStyle = blocks ? categoryColor(cat) : sliceColor(name, cat);
      ctx.fillRect(x0, y + 1, x1 - x0, h);
    }
    stats.slices += 1;
    if (x1 - x0 >= LABEL_MIN_PX && !dim) labels.push(i, x0, x1, y);
  }
  ctx.globalAlpha = 1;
  for (let j = 0; j < labels.length; j += 4) {
    const i = labels[j];
    const x0 = labels[j + 1];
    const x1 = labels[j + 2];
    const y = labels[j + 3];
    const cat = cats[e.category[i]];
    const mixed = blocks && hasMix(e, i);
    ctx.fillStyle = !mixed && darkText(cat) ? "#1b1f24" : "#ffffff";
    const text = elide(ctx, s, sliceLabel(e, i, names[e.name[i]]), x1 - x0 - 6);
    if (text) {
      ctx.fillText(text, x0 + 3, y + ROW_H / 2);
      stats.labels += 1;
      stats.labelled.add(i);
    }
  }
  if (matches) drawMatchOutlines(ctx, s, e, matches, k);
}

function hasMix(e, i) {
  const m = e.mix;
  return m[4 * i] + m[4 * i + 1] + m[4 * i + 2] + m[4 * i + 3] > 0;
}

/** A merged GPU block as stacked bands, one per category, by its share of the time. */
function drawMix(ctx, e, i, x, y, w, h) {
  const m = e.mix;
  const total = m[4 * i] + m[4 * i + 1] + m[4 * i + 2] + m[4 * i + 3];
  if (total <= 0) return false;
  let top = y;
  for (let c = 0; c < 4; c++) {
    const share = m[4 * i + c] / total;
    if (share <= 0) continue;
    const bh = c === 3 ? y + h - top : Math.max(1, share * h);
    ctx.fillStyle = categoryColor(MIX_CATEGORIES[c]);
    ctx.fillRect(x, top, w, Math.min(bh, y + h - top));
    top += bh;
  }
  return true;
}

const widths = new Map();

function textWidth(ctx, text) {
  let w = widths.get(text);
  if (w === undefined) {
    w = ctx.measureText(text).width;
    if (widths.size > 20000) widths.clear();
    widths.set(text, w);
  }
  return w;
}

/** The text cut to fit `room` px with an ellipsis, or "" when not even 3 characters fit. */
export function elide(ctx, s, text, room) {
  const full = textWidth(ctx, text);
  if (full <= room) return text;
  const per = full / text.length;
  const n = Math.floor((room - 8) / per);
  return n >= 3 ? text.slice(0, n) + "…" : "";
}

function drawMatchOutlines(ctx, s, e, matches, k) {
  ctx.strokeStyle = "#ffb300";
  ctx.lineWidth = 2;
  for (let i = 0; i < e.n; i++) {
    if (!matches[e.name[i]]) continue;
    const laneTop = s.layout.laneY.get(e.lane[i]);
    if (laneTop === undefined) continue;
    const x0 = Math.max(SHELL_W, SHELL_W + (e.start_ns[i] - s.view.start) * k);
    const x1 = Math.min(s.width, x0 + Math.max(e.dur_ns[i] * k, 2));
    if (x1 < SHELL_W || x0 > s.width) continue;
    const y = laneTop + e.depth[i] * ROW_H - s.scrollY + TOP_H;
    ctx.strokeRect(x0, y + 1, Math.max(x1 - x0, 2), ROW_H - 2);
  }
}

function drawCounters(ctx, s) {
  const c = s.counters;
  if (!c) return;
  const byKey = new Map(c.tracks.map((t) => [t.key, t]));
  for (const row of s.layout.rows) {
    if (row.type !== "counter") continue;
    const track = byKey.get(row.counter.key);
    const y = rowScreenY(s, row);
    if (!track || y > s.height || y + row.h < TOP_H) continue;
    const values = track.values;
    const n = values.length;
    const max = track.unit === "fraction" ? 1 : Math.max(1, ...values.filter((v) => v != null));
    const binW = (c.end - c.start) / n;
    ctx.fillStyle = track.kind === "gpu_utilization" ? "rgba(46,125,50,0.55)" : "rgba(94,53,177,0.45)";
    ctx.beginPath();
    const base = y + row.h - 3;
    let open = false;
    for (let b = 0; b < n; b++) {
      const v = values[b];
      const x0 = xOf(s, c.start + b * binW);
      const x1 = xOf(s, c.start + (b + 1) * binW);
      if (x1 < SHELL_W || x0 > s.width) continue;
      if (v == null) continue;
      const top = base - (v / max) * (row.h - 8);
      ctx.rect(x0, top, Math.max(x1 - x0, 0.5), base - top);
      open = true;
    }
    if (open) ctx.fill();
  }
}

const SUMMARY_PX = 2;

/** Each GPU device's header row: its streams' time by category, stacked per 2 px. */
function drawSummaries(ctx, s) {
  const devices = s.layout.rows.filter((r) => r.type === "header" && r.node.device);
  if (!devices.length || !s.entry) {
    s.summaries = new Map();
    return;
  }
  const n = Math.max(1, Math.floor((s.width - SHELL_W) / SUMMARY_PX));
  const sums = deviceSummaries(s.entry, devices.map((r) => r.node), s.view.start, s.view.end, n);
  s.summaries = sums;
  for (const row of devices) {
    const y = rowScreenY(s, row);
    if (y > s.height || y + row.h < TOP_H) continue;
    const sum = sums.get(row.node.id);
    const h = row.h - 4;
    for (let k = 0; k < n; k++) {
      let total = 0;
      for (let c = 0; c < 4; c++) total += sum.buckets[4 * k + c];
      if (total <= 0) continue;
      // Busy share of the bucket (streams running at once can exceed it: a full bar).
      const full = Math.min(1, total / sum.width);
      let top = y + 2 + h;
      for (let c = 0; c < 4; c++) {
        const part = sum.buckets[4 * k + c];
        if (part <= 0) continue;
        const bh = (part / total) * full * h;
        ctx.fillStyle = categoryColor(MIX_CATEGORIES[c]);
        ctx.fillRect(SHELL_W + k * SUMMARY_PX, top - bh, SUMMARY_PX, bh);
        top -= bh;
      }
    }
  }
}

function drawArea(ctx, s) {
  if (!s.area) return;
  const x0 = xOf(s, s.area.start);
  const x1 = xOf(s, s.area.end);
  ctx.fillStyle = "rgba(33,150,243,0.12)";
  ctx.fillRect(x0, TOP_H, x1 - x0, s.height - TOP_H);
  ctx.fillStyle = "rgba(33,150,243,0.9)";
  ctx.fillRect(x0, TOP_H, 1, s.height - TOP_H);
  ctx.fillRect(x1 - 1, TOP_H, 1, s.height - TOP_H);
}

/** The top of an event's row on screen, or null when its lane is hidden. */
function rowTop(s, lane, id) {
  const laneTop = s.layout.laneY.get(lane);
  if (laneTop === undefined) return null;
  return laneTop + s.depthOf(id) * ROW_H - s.scrollY + TOP_H;
}

/** Arrows from each flow's source slice to its target, leaving and entering by the
 *  edges that face each other (a launch below its kernel leaves by its top). */
function drawFlows(ctx, s) {
  let drawn = 0;
  if (!s.flows || !s.flows.length) return 0;
  ctx.lineWidth = 1.5;
  for (const f of s.flows) {
    const ya = rowTop(s, f.from_lane, f.from_id);
    const yb = rowTop(s, f.to_lane, f.to_id);
    if (ya === null || yb === null) continue;
    const down = yb >= ya;
    const a = [xOf(s, f.from), down ? ya + ROW_H - 1 : ya + 1];
    const b = [xOf(s, f.to), down ? yb + 1 : yb + ROW_H - 1];
    const colour = f.kind === "collective" ? "#c2185b" : "#263238";
    ctx.strokeStyle = colour;
    ctx.fillStyle = colour;
    const dy = (down ? 1 : -1) * Math.max(24, Math.abs(b[1] - a[1]) / 2);
    ctx.beginPath();
    ctx.moveTo(a[0], a[1]);
    ctx.bezierCurveTo(a[0], a[1] + dy, b[0], b[1] - dy, b[0], b[1]);
    ctx.stroke();
    ctx.beginPath();
    ctx.moveTo(b[0], b[1]);
    ctx.lineTo(b[0] - 4, b[1] + (down ? -7 : 7));
    ctx.lineTo(b[0] + 4, b[1] + (down ? -7 : 7));
    ctx.closePath();
    ctx.fill();
    drawn += 1;
  }
  return drawn;
}

function drawSelection(ctx, s) {
  const sel = s.selected;
  if (!sel) return;
  const laneTop = s.layout.laneY.get(sel.lane);
  if (laneTop === undefined) return;
  const x0 = xOf(s, sel.start);
  const x1 = Math.max(xOf(s, sel.start + sel.dur), x0 + 2);
  const y = laneTop + sel.depth * ROW_H - s.scrollY + TOP_H;
  ctx.lineWidth = 2;
  ctx.strokeStyle = "#000";
  ctx.strokeRect(x0, y + 1, x1 - x0, ROW_H - 2);
  ctx.strokeStyle = "#fff";
  ctx.lineWidth = 1;
  ctx.strokeRect(x0 + 2, y + 3, Math.max(x1 - x0 - 4, 0), ROW_H - 6);
}

function drawShell(ctx, s) {
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, TOP_H, SHELL_W, s.height - TOP_H);
  ctx.clip();
  ctx.fillStyle = "rgba(255,255,255,0.0)";
  for (const row of s.layout.rows) {
    const y = rowScreenY(s, row);
    if (y > s.height || y + row.h < TOP_H) continue;
    const indent = 8 + Math.max(0, row.node.depth) * 12;
    if (row.type === "header") {
      const collapsed = s.collapsed.has(row.node.id);
      ctx.fillStyle = "#1b1f24";
      ctx.font = "600 " + FONT;
      const label = `${collapsed ? "▸" : "▾"} ${row.node.label}`;
      ctx.fillText(label, indent, y + row.h / 2);
      ctx.font = FONT;
      ctx.fillStyle = "#68717d";
      const what = `${formatCount(row.node.laneCount)} lanes · ${formatCount(row.node.events)}`;
      const w = textWidth(ctx, what);
      ctx.fillText(what, SHELL_W - 8 - w, y + row.h / 2);
    } else if (row.type === "counter") {
      ctx.fillStyle = "#37474f";
      ctx.fillText(row.counter.label, indent + 12, y + row.h / 2 - 6);
      ctx.fillStyle = "#68717d";
      const peak = s.counterPeak(row.counter.key);
      if (peak !== null) {
        const text = row.counter.unit === "fraction" ? `peak ${(peak * 100).toFixed(0)}%` : `peak ${formatBytes(peak)}`;
        ctx.fillText(text, indent + 12, y + row.h / 2 + 7);
      }
    } else {
      ctx.fillStyle = "#1b1f24";
      ctx.fillText(elide(ctx, s, row.lane.short, SHELL_W - indent - 70), indent + 12, y + 3 + ROW_H / 2);
      ctx.fillStyle = "#68717d";
      const what = formatCount(row.lane.events);
      ctx.fillText(what, SHELL_W - 8 - textWidth(ctx, what), y + 3 + ROW_H / 2);
    }
  }
  ctx.restore();
  ctx.fillStyle = "#d5dae1";
  ctx.fillRect(SHELL_W - 1, TOP_H, 1, s.height - TOP_H);
}

function drawOverview(ctx, s) {
  ctx.fillStyle = "#f6f7f9";
  ctx.fillRect(0, 0, s.width, OVERVIEW_H);
  ctx.fillStyle = "#37474f";
  ctx.fillText("GPU utilisation, whole trace", 8, OVERVIEW_H / 2);
  const bins = s.overview || [];
  const span = s.span || 1;
  const k = (s.width - SHELL_W) / span;
  ctx.fillStyle = "rgba(46,125,50,0.6)";
  for (const b of bins) {
    const x0 = SHELL_W + b.start * k;
    const x1 = SHELL_W + b.end * k;
    const h = b.utilization * (OVERVIEW_H - 6);
    ctx.fillRect(x0, OVERVIEW_H - 3 - h, Math.max(x1 - x0, 0.5), h);
  }
  const v0 = SHELL_W + s.view.start * k;
  const v1 = SHELL_W + s.view.end * k;
  ctx.fillStyle = "rgba(0,0,0,0.10)";
  ctx.fillRect(SHELL_W, 0, Math.max(0, v0 - SHELL_W), OVERVIEW_H);
  ctx.fillRect(v1, 0, Math.max(0, s.width - v1), OVERVIEW_H);
  ctx.strokeStyle = "#1565c0";
  ctx.lineWidth = 1;
  ctx.strokeRect(v0, 0.5, Math.max(v1 - v0, 2), OVERVIEW_H - 1);
}

function drawRuler(ctx, s) {
  const y = OVERVIEW_H;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, y, s.width, RULER_H);
  ctx.fillStyle = "#d5dae1";
  ctx.fillRect(0, y + RULER_H - 1, s.width, 1);
  const span = s.view.end - s.view.start;
  ctx.fillStyle = "#37474f";
  ctx.fillText(`${formatDuration(span)} shown`, 8, y + RULER_H / 2);
  const step = tickStep(span, s.width - SHELL_W);
  const first = Math.ceil(s.view.start / step) * step;
  ctx.strokeStyle = "#9aa3ad";
  ctx.beginPath();
  for (let t = first; t <= s.view.end; t += step) {
    const x = Math.round(xOf(s, t)) + 0.5;
    ctx.moveTo(x, y + RULER_H - 8);
    ctx.lineTo(x, y + RULER_H);
    ctx.fillText(`+${formatTick(t, step)}`, x + 3, y + RULER_H / 2 - 2);
  }
  ctx.stroke();
  if (s.area) {
    const x0 = xOf(s, s.area.start);
    const x1 = xOf(s, s.area.end);
    ctx.fillStyle = "rgba(33,150,243,0.35)";
    ctx.fillRect(x0, y, x1 - x0, RULER_H);
    ctx.fillStyle = "#0d47a1";
    const text = formatDuration(s.area.end - s.area.start);
    ctx.fillText(text, Math.max(x0 + 3, SHELL_W + 3), y + RULER_H / 2);
  }
  if (s.hoverX !== null && s.hoverX > SHELL_W) {
    ctx.fillStyle = "rgba(0,0,0,0.35)";
    ctx.fillRect(Math.round(s.hoverX), TOP_H, 1, s.height - TOP_H);
  }
}

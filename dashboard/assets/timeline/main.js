// perfdash's timeline: a canvas renderer mounted into the Dash page's
// `#perfdash-timeline` element, fed per visible window by the API in column form.
//
// Test and benchmark hook: `window.perfdashTimeline` (see `hook()` below).

import { WindowCache, getJson } from "./data.js";
import { SUMMARY_CATEGORIES } from "./summary.js";
import { areaPanel, detailsPanel, el } from "./panels.js";
import { OVERVIEW_H, SHELL_W, TOP_H, draw, tOf } from "./render.js";
import { ROW_H, attachCounters, buildTree, layoutRows } from "./tracks.js";
import { formatBytes, formatCount, formatDuration } from "./format.js";
import { setPalette } from "./colors.js";

const MIN_SPAN = 200; // ns: the deepest zoom
const ZOOM_STEP = 0.8; // W/S: the width after one press, and its inverse
const PAN_STEP = 0.2; // A/D: a fifth of the view
const COUNTER_BINS = 600;

function parseNs(value) {
  if (typeof value === "bigint") return value;
  if (typeof value === "number") return BigInt(Math.round(value));
  if (typeof value === "string" && /^-?\d+$/.test(value.trim())) return BigInt(value.trim());
  throw new Error(`not a time in ns: ${value}`);
}

class Timeline {
  constructor(root) {
    this.root = root;
    this.traceId = root.dataset.trace;
    this.api = `/api/v1/traces/${encodeURIComponent(this.traceId)}`;
    this.collapsed = new Set();
    this.depths = new Map();
    this.scrollY = 0;
    this.view = { start: 0, end: 1 };
    this.selected = null;
    this.flows = [];
    this.area = null;
    this.areaState = { sort: "total_ns", catSort: "total_ns" };
    this.search = null;
    this.hoverX = null;
    this.counters = null;
    this.overview = [];
    this.frame = 0;
    this.lastStats = { slices: 0, labels: 0, flows: 0 };
    this.disposers = [];
    this.buildDom();
  }

  // ---- set-up -------------------------------------------------------------------------

  buildDom() {
    const button = (label, title, onclick) => el("button", { class: "button button-secondary pdt-btn", title, onclick }, label);
    this.searchBox = el("input", { type: "search", class: "pdt-search", placeholder: "Search names… (Enter: next, Shift+Enter: previous)", "aria-label": "Search slice names" });
    this.matchInfo = el("span", { class: "pdt-match-info muted small" });
    this.status = el("span", { class: "pdt-status muted small" });
    const toolbar = el(
      "div",
      { class: "pdt-toolbar" },
      button("Fit", "Show the whole trace", () => this.setRange(null, null)),
      button("Fit selection", "Zoom to the selected slice (F)", () => this.fitSelection()),
      this.searchBox,
      button("◀", "Previous match (Shift+Enter)", () => this.stepMatch(-1)),
      button("▶", "Next match (Enter)", () => this.stepMatch(1)),
      this.matchInfo,
      el("span", { class: "pdt-help muted small" }, "W/S zoom · A/D pan · Ctrl+wheel zoom · drag to pan · drag the time axis to select an area"),
    );
    this.canvas = el("canvas", { class: "pdt-canvas", tabindex: "0" });
    this.tooltip = el("div", { class: "pdt-tooltip", hidden: "" });
    this.wrap = el("div", { class: "pdt-canvas-wrap" }, this.canvas, this.tooltip);
    this.tabs = {
      details: el("button", { class: "pdt-tab active", onclick: () => this.showTab("details") }, "Current selection"),
      area: el("button", { class: "pdt-tab", onclick: () => this.showTab("area") }, "Area selection"),
    };
    this.panes = {
      details: el("div", { class: "pdt-pane" }, el("p", { class: "muted" }, "Click a slice to see its details and flows; click a merged block to zoom into it.")),
      area: el("div", { class: "pdt-pane", hidden: "" }, el("p", { class: "muted" }, "Drag across the time axis to select an area.")),
    };
    const panels = el("div", { class: "pdt-panels" }, el("div", { class: "pdt-tabs" }, this.tabs.details, this.tabs.area), this.panes.details, this.panes.area);
    this.root.replaceChildren(el("div", { class: "pdt-bar" }, toolbar, this.status), this.wrap, panels);
    this.ctx = this.canvas.getContext("2d");
  }

  showTab(name) {
    for (const [k, tab] of Object.entries(this.tabs)) {
      tab.classList.toggle("active", k === name);
      this.panes[k].hidden = k !== name;
    }
  }

  async start() {
    const lanes = await getJson(`${this.api}/timeline/lanes`);
    this.t0 = BigInt(lanes.trace_start_ns);
    this.span = Math.max(1, Number(BigInt(lanes.trace_end_ns) - this.t0));
    this.tree = buildTree(lanes.lanes);
    this.lanes = new Map(lanes.lanes.map((l) => [l.lane, l]));
    for (const l of lanes.lanes) this.depths.set(l.lane, (l.max_depth || 0) + 1);
    this.relayout();
    this.cache = new WindowCache(this.traceId, this.t0, this.span, (entry, urgent) => this.arrived(entry, urgent));
    this.bindInput();
    this.resize();
    getJson(`${this.api}/timeline/overview?bins=800`)
      .then((o) => {
        this.overview = o.bins.map((b) => ({ start: Number(BigInt(b.start_ns) - this.t0), end: Number(BigInt(b.end_ns) - this.t0), utilization: b.utilization }));
        this.requestDraw();
      })
      .catch(() => {});
    const d = this.root.dataset;
    const s = d.start ? Number(parseNs(d.start) - this.t0) : null;
    const e = d.end ? Number(parseNs(d.end) - this.t0) : null;
    const first = s !== null && e !== null && e > s ? [s, e] : [0, this.span];
    return this.go(first[0], first[1]);
  }

  relayout() {
    this.layout = layoutRows(this.tree, this.collapsed, this.depths);
    this.clampScroll();
  }

  // ---- view and data ----------------------------------------------------------------------

  clampView(s, e) {
    let w = Math.max(MIN_SPAN, e - s);
    w = Math.min(w, this.span * 1.05);
    let start = s + (e - s - w) / 2;
    start = Math.max(-this.span * 0.025, Math.min(start, this.span * 1.025 - w));
    return [start, start + w];
  }

  /** Move to [s, e) (ns offsets); resolves once the window's own data is drawn. */
  go(s, e) {
    const t = performance.now();
    [s, e] = this.clampView(s, e);
    this.view = { start: s, end: e };
    this.syncUrl();
    this.requestDraw();
    const ticket = ++this.frame;
    return this.cache.load(Math.max(0, s), Math.min(this.span + 1, e)).then(() => {
      const stats = this.drawNow();
      if (ticket === this.frame) {
        // Only once the view's own data is in: prefetch, then (the view staying put)
        // the counter tracks, so neither competes with the request a user waits for.
        this.prefetchAround();
        this.fetchCounters();
      }
      return { ms: performance.now() - t, slices: stats.slices, labels: stats.labels };
    });
  }

  arrived(entry, urgent) {
    let grew = false;
    for (let i = 0; i < entry.n; i++) {
      const need = entry.depth[i] + 1;
      if (need > (this.depths.get(entry.lane[i]) || 1)) {
        this.depths.set(entry.lane[i], need);
        grew = true;
      }
    }
    if (grew) this.relayout();
    if (urgent || (entry.start < this.view.end && entry.end > this.view.start)) this.requestDraw();
  }

  prefetchAround() {
    const { start: s, end: e } = this.view;
    const w = e - s;
    const c = this.hoverX !== null && this.hoverX > SHELL_W ? tOf(this.state(), this.hoverX) : (s + e) / 2;
    // What the next key press or wheel step asks for: W (0.8x about the pointer), then
    // deeper zoom, a pan of a width either way, and zooming out.
    this.cache.prefetch(c - (c - s) * ZOOM_STEP, c + (e - c) * ZOOM_STEP);
    this.cache.prefetch(s + w, e + w);
    this.cache.prefetch(s - w, e - w);
    this.cache.prefetch(c - w, c + w);
    this.cache.prefetch(c - w / 5, c + w / 5);
  }

  fetchCounters() {
    clearTimeout(this.counterTimer);
    this.counterTimer = setTimeout(() => {
      this.counterTimer = null;
      this.countersLoading = this.loadCounters();
    }, 300);
  }

  async loadCounters() {
    const { start: s, end: e } = this.view;
    const w = e - s;
    const have = this.counters;
    if (have && have.start <= s && have.end >= e && have.end - have.start <= 3 * w) return;
    const lo = Math.max(0, Math.floor(s - w / 2));
    const hi = Math.min(this.span + 1, Math.ceil(e + w / 2));
    if (hi <= lo) return;
    const url = `${this.api}/timeline/counters?start_ns=${this.t0 + BigInt(lo)}&end_ns=${this.t0 + BigInt(hi)}&bins=${COUNTER_BINS}`;
    try {
      const c = await getJson(url);
      const first = !this.counters;
      this.counters = { start: lo, end: hi, tracks: c.tracks };
      if (first) {
        attachCounters(this.tree, c.tracks.map(({ key, label, kind, unit, rank, device }) => ({ key, label, kind, unit, rank, device })));
        this.relayout();
      }
      this.requestDraw();
    } catch (err) {
      this.counters = null; // the page still works without counter tracks
    }
  }

  counterPeak(key) {
    const track = this.counters && this.counters.tracks.find((t) => t.key === key);
    if (!track) return null;
    let peak = null;
    for (const v of track.values) if (v != null && (peak === null || v > peak)) peak = v;
    return peak;
  }

  syncUrl() {
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => {
      const q = new URLSearchParams(window.location.search);
      q.set("start_ns", (this.t0 + BigInt(Math.round(this.view.start))).toString());
      q.set("end_ns", (this.t0 + BigInt(Math.round(this.view.end))).toString());
      window.history.replaceState(window.history.state, "", `${window.location.pathname}?${q}`);
    }, 200);
  }

  // ---- drawing --------------------------------------------------------------------------

  state() {
    const { entry } = this.cache ? this.cache.lookup(this.view.start, this.view.end) : { entry: null };
    return {
      width: this.width,
      height: this.height,
      view: this.view,
      span: this.span,
      scrollY: this.scrollY,
      layout: this.layout,
      collapsed: this.collapsed,
      entry,
      counters: this.counters,
      overview: this.overview,
      selected: this.selected,
      flows: this.flows,
      area: this.area,
      search: this.search,
      hoverX: this.hoverX,
      depthOf: (id) => this.depthOf(id),
      counterPeak: (key) => this.counterPeak(key),
    };
  }

  requestDraw() {
    if (this.rafPending) return;
    this.rafPending = true;
    requestAnimationFrame(() => {
      this.rafPending = false;
      this.drawNow();
    });
  }

  drawNow() {
    if (!this.width) return this.lastStats;
    const s = this.state();
    const ctx = this.ctx;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    this.lastStats = draw(ctx, s);
    this.lastEntry = s.entry;
    this.lastSummaries = s.summaries;
    this.showStatus(s.entry);
    return this.lastStats;
  }

  showStatus(entry) {
    if (!entry) {
      this.status.textContent = "loading…";
      return;
    }
    const what = entry.mode === "events" ? "individual events" : `busy blocks (gaps under ${formatDuration(entry.merge_gap_ns)} merged, ~${formatCount(entry.estimated_events)} events)`;
    this.status.textContent = `${formatCount(this.lastStats.slices)} slices drawn · ${what}`;
  }

  resize() {
    const rect = this.wrap.getBoundingClientRect();
    this.dpr = window.devicePixelRatio || 1;
    this.width = Math.max(400, Math.floor(rect.width));
    this.height = Math.max(240, Math.floor(rect.height));
    this.canvas.width = Math.floor(this.width * this.dpr);
    this.canvas.height = Math.floor(this.height * this.dpr);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${this.height}px`;
    this.clampScroll();
    this.drawNow();
  }

  clampScroll() {
    const room = (this.height || 400) - TOP_H;
    const max = Math.max(0, (this.layout ? this.layout.height : 0) - room);
    this.scrollY = Math.max(0, Math.min(this.scrollY, max));
  }

  // ---- hit testing ----------------------------------------------------------------------

  rowAt(y) {
    const yy = y - TOP_H + this.scrollY;
    return this.layout.rows.find((r) => yy >= r.y && yy < r.y + r.h) || null;
  }

  /** The index of the slice under (x, y) in the drawn entry, or -1. */
  sliceAt(x, y) {
    const e = this.lastEntry;
    const row = this.rowAt(y);
    if (!e || !row || row.type !== "lane" || x < SHELL_W) return -1;
    const laneTop = this.layout.laneY.get(row.lane.lane);
    const depth = Math.floor((y - TOP_H + this.scrollY - laneTop) / ROW_H);
    const s = this.state();
    const t = tOf(s, x);
    const slack = (2 * (this.view.end - this.view.start)) / (this.width - SHELL_W);
    let best = -1;
    for (let i = 0; i < e.n; i++) {
      if (e.lane[i] !== row.lane.lane || e.depth[i] !== depth) continue;
      const a = e.start_ns[i];
      const b = a + e.dur_ns[i];
      if (t >= a - slack && t <= b + slack && (best < 0 || e.dur_ns[i] < e.dur_ns[best])) best = i;
    }
    return best;
  }

  depthOf(id) {
    const e = this.lastEntry;
    if (!e || id === null || id === undefined) return 0;
    if (!e.idIndex) {
      e.idIndex = new Map();
      for (let i = 0; i < e.n; i++) if (e.id[i] >= 0) e.idIndex.set(e.id[i], i);
    }
    const i = e.idIndex.get(id);
    return i === undefined ? 0 : e.depth[i];
  }

  // ---- input ----------------------------------------------------------------------------

  bindInput() {
    const on = (target, type, fn, opts) => {
      target.addEventListener(type, fn, opts);
      this.disposers.push(() => target.removeEventListener(type, fn, opts));
    };
    on(this.canvas, "wheel", (ev) => this.onWheel(ev), { passive: false });
    on(this.canvas, "mousedown", (ev) => this.onDown(ev));
    on(window, "mousemove", (ev) => this.onMove(ev));
    on(window, "mouseup", (ev) => this.onUp(ev));
    on(this.canvas, "mouseleave", () => { this.hoverX = null; this.tooltip.hidden = true; this.requestDraw(); });
    on(window, "keydown", (ev) => this.onKey(ev));
    on(this.searchBox, "input", () => this.searchSoon());
    on(this.searchBox, "keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        this.stepMatch(ev.shiftKey ? -1 : 1);
      }
    });
    const ro = new ResizeObserver(() => this.resize());
    ro.observe(this.wrap);
    this.disposers.push(() => ro.disconnect());
  }

  local(ev) {
    const r = this.canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  zoomAt(factor, x) {
    const { start: s, end: e } = this.view;
    const anchor = x !== null && x > SHELL_W ? tOf(this.state(), x) : (s + e) / 2;
    return this.go(anchor - (anchor - s) * factor, anchor + (e - anchor) * factor);
  }

  pan(fraction) {
    const w = this.view.end - this.view.start;
    return this.go(this.view.start + w * fraction, this.view.end + w * fraction);
  }

  onWheel(ev) {
    ev.preventDefault();
    const [x] = this.local(ev);
    if (ev.ctrlKey || ev.metaKey) {
      this.zoomAt(Math.exp(ev.deltaY * 0.0025), x);
    } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      const d = ev.shiftKey ? ev.deltaY : ev.deltaX;
      this.pan(d / (this.width - SHELL_W));
    } else {
      this.scrollY += ev.deltaY;
      this.clampScroll();
      this.requestDraw();
    }
  }

  onDown(ev) {
    if (ev.button !== 0) return;
    const [x, y] = this.local(ev);
    this.canvas.focus({ preventScroll: true });
    if (y < OVERVIEW_H && x > SHELL_W) {
      this.drag = { kind: "overview" };
      this.overviewTo(x);
    } else if (y < TOP_H && x > SHELL_W) {
      const t = tOf(this.state(), x);
      this.drag = { kind: "area", from: t };
      this.area = { start: t, end: t };
    } else {
      this.drag = { kind: "pan", x, y, view: { ...this.view }, scrollY: this.scrollY, moved: false };
    }
    ev.preventDefault();
  }

  overviewTo(x) {
    const t = ((x - SHELL_W) / (this.width - SHELL_W)) * this.span;
    const w = this.view.end - this.view.start;
    this.go(t - w / 2, t + w / 2);
  }

  onMove(ev) {
    const [x, y] = this.local(ev);
    const d = this.drag;
    if (d && d.kind === "overview") {
      this.overviewTo(x);
      return;
    }
    if (d && d.kind === "area") {
      const t = tOf(this.state(), x);
      this.area = { start: Math.min(d.from, t), end: Math.max(d.from, t) };
      this.requestDraw();
      return;
    }
    if (d && d.kind === "pan") {
      const dx = x - d.x;
      const dy = y - d.y;
      if (!d.moved && Math.hypot(dx, dy) < 4) return;
      d.moved = true;
      const k = (d.view.end - d.view.start) / (this.width - SHELL_W);
      this.scrollY = d.scrollY - dy;
      this.clampScroll();
      this.go(d.view.start - dx * k, d.view.end - dx * k);
      return;
    }
    if (ev.target !== this.canvas) return;
    this.hoverX = x;
    this.hover(x, y, ev);
    this.requestDraw();
  }

  onUp(ev) {
    const d = this.drag;
    this.drag = null;
    if (!d) return;
    const [x, y] = this.local(ev);
    if (d.kind === "area") {
      if (this.area && xSpan(this, this.area) >= 3) this.loadArea();
      else this.area = null;
      this.requestDraw();
    } else if (d.kind === "pan" && !d.moved) {
      this.click(x, y);
    }
  }

  click(x, y) {
    const row = this.rowAt(y);
    if (row && row.type === "header") {
      const id = row.node.id;
      if (this.collapsed.has(id)) this.collapsed.delete(id);
      else this.collapsed.add(id);
      this.relayout();
      this.requestDraw();
      return;
    }
    const i = this.sliceAt(x, y);
    if (i < 0) return;
    const e = this.lastEntry;
    if (e.id[i] < 0) {
      const a = e.start_ns[i];
      const b = a + e.dur_ns[i];
      const pad = (b - a) * 0.05 + 1000;
      this.go(a - pad, b + pad);
      return;
    }
    this.select(e.id[i]);
  }

  onKey(ev) {
    if (!this.root.isConnected) return;
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const x = this.hoverX;
    switch (ev.key.toLowerCase()) {
      case "w": this.zoomAt(ZOOM_STEP, x); break;
      case "s": this.zoomAt(1 / ZOOM_STEP, x); break;
      case "a": this.pan(-PAN_STEP); break;
      case "d": this.pan(PAN_STEP); break;
      case "f": this.fitSelection(); break;
      case "escape": this.selected = null; this.flows = []; this.area = null; this.requestDraw(); break;
      default: return;
    }
    ev.preventDefault();
  }

  hover(x, y, ev) {
    const i = this.sliceAt(x, y);
    if (i < 0) {
      this.tooltip.hidden = true;
      return;
    }
    const e = this.lastEntry;
    const name = e.names[e.name[i]];
    const lines = [name, `${formatDuration(e.dur_ns[i])} · ${e.categories[e.category[i]]}`];
    if (e.id[i] < 0) {
      lines.push(`${formatCount(e.count[i])} events merged; busy ${formatDuration(e.busy_ns[i])} (${((100 * e.busy_ns[i]) / Math.max(1, e.dur_ns[i])).toFixed(0)}% of the block)`);
      const m = e.mix;
      const total = m[4 * i] + m[4 * i + 1] + m[4 * i + 2] + m[4 * i + 3];
      if (total > 0) {
        e.mix_categories.forEach((c, j) => {
          const v = m[4 * i + j];
          if (v > 0) lines.push(`${c}: ${formatDuration(v)} (${((100 * v) / total).toFixed(0)}%)`);
        });
      }
      lines.push("click to zoom in");
    }
    this.tooltip.replaceChildren(...lines.map((l, j) => el(j === 0 ? "strong" : "div", {}, l)));
    this.tooltip.hidden = false;
    const left = Math.min(x + 14, this.width - 330);
    this.tooltip.style.left = `${Math.max(0, left)}px`;
    this.tooltip.style.top = `${y + 16}px`;
  }

  // ---- selection, area, search --------------------------------------------------------------

  async select(id) {
    const [detail, flows] = await Promise.all([
      getJson(`${this.api}/events/${id}`),
      getJson(`${this.api}/events/${id}/flows`).catch(() => ({ items: [], truncated: false })),
    ]);
    const ev = detail.event;
    const start = Number(BigInt(ev.start_ns) - this.t0);
    this.selected = { id, lane: ev.lane, start, dur: ev.dur_ns, depth: this.depthOf(id) };
    this.flows = flows.items.map((f) => ({ ...f, from: Number(BigInt(f.from_ns) - this.t0), to: Number(BigInt(f.to_ns) - this.t0) }));
    this.panes.details.replaceChildren(detailsPanel(detail, flows, this.t0, (oid) => this.follow(oid), (lane) => (this.lanes.get(lane) || { label: `lane ${lane}` }).label));
    this.showTab("details");
    const stats = this.drawNow();
    return { flows: stats.flows, listed: flows.items.length };
  }

  /** Select an event and bring it into view (keeping the zoom where it fits). */
  async follow(id) {
    const detail = await getJson(`${this.api}/events/${id}`);
    const start = Number(BigInt(detail.event.start_ns) - this.t0);
    const dur = detail.event.dur_ns;
    const w = this.view.end - this.view.start;
    if (start < this.view.start || start + dur > this.view.end) {
      const width = Math.max(w, dur * 1.5);
      await this.go(start + dur / 2 - width / 2, start + dur / 2 + width / 2);
    }
    return this.select(id);
  }

  fitSelection() {
    const sel = this.selected;
    if (!sel) return Promise.resolve(null);
    const pad = Math.max(sel.dur * 0.1, 500);
    return this.go(sel.start - pad, sel.start + sel.dur + pad);
  }

  async loadArea() {
    const a = this.area;
    const lanes = [...this.layout.laneY.keys()].join(",");
    const url = `${this.api}/timeline/area?start_ns=${this.t0 + BigInt(Math.round(Math.max(0, a.start)))}&end_ns=${this.t0 + BigInt(Math.round(a.end))}&lanes=${lanes}`;
    this.showTab("area");
    this.panes.area.replaceChildren(el("p", { class: "muted" }, "Summing the selected area…"));
    try {
      this.areaData = await getJson(url);
      this.renderArea();
    } catch (err) {
      this.panes.area.replaceChildren(el("p", { class: "notice notice-error" }, `Area selection failed: ${err.message}`));
    }
    return this.areaData;
  }

  renderArea() {
    this.panes.area.replaceChildren(areaPanel(this.areaData, this.areaState, () => this.renderArea()));
  }

  searchSoon() {
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.runSearch(this.searchBox.value), 250);
  }

  async runSearch(query) {
    const q = query.trim();
    if (!q) {
      this.search = null;
      this.matchInfo.textContent = "";
      this.requestDraw();
      return null;
    }
    const result = await getJson(`${this.api}/timeline/search?q=${encodeURIComponent(q)}&limit=2000`);
    const lower = q.toLowerCase();
    const matchesCache = new WeakMap();
    const matches = result.matches
      .map((m) => ({ ...m, start: Number(BigInt(m.start_ns) - this.t0), end: Number(BigInt(m.end_ns) - this.t0) }))
      .sort((a, b) => a.start - b.start || a.id - b.id);
    const total = result.names.reduce((n, x) => n + x.count, 0);
    this.search = {
      q,
      matches,
      total,
      index: -1,
      nameMatches: (entry) => {
        let m = matchesCache.get(entry);
        if (!m) {
          m = Uint8Array.from(entry.names, (n) => (n.toLowerCase().includes(lower) ? 1 : 0));
          matchesCache.set(entry, m);
        }
        return m;
      },
    };
    this.showMatchInfo();
    this.requestDraw();
    return { names: result.names.length, matches: matches.length, total };
  }

  showMatchInfo() {
    const s = this.search;
    if (!s) return;
    const where = s.index >= 0 ? `${formatCount(s.index + 1)} / ` : "";
    const listed = s.matches.length < s.total ? ` (first ${formatCount(s.matches.length)} listed)` : "";
    this.matchInfo.textContent = s.total ? `${where}${formatCount(s.total)} matches${listed}` : "no matches";
  }

  /** Enter / Shift+Enter: centre the next or previous match and select it. */
  async stepMatch(direction) {
    if (this.searchBox.value.trim() && (!this.search || this.search.q !== this.searchBox.value.trim())) {
      clearTimeout(this.searchTimer);
      await this.runSearch(this.searchBox.value);
    }
    const s = this.search;
    if (!s || !s.matches.length) return null;
    const n = s.matches.length;
    s.index = s.index < 0 ? (direction > 0 ? 0 : n - 1) : (s.index + direction + n) % n;
    const m = s.matches[s.index];
    const dur = Math.max(1, m.end - m.start);
    const w = Math.min(Math.max(this.view.end - this.view.start, dur * 1.5), Math.max(dur * 40, 20000));
    const mid = m.start + dur / 2;
    await this.go(mid - w / 2, mid + w / 2);
    this.showMatchInfo();
    await this.select(m.id);
    return { index: s.index, id: m.id };
  }

  /** Resolves once nothing is being fetched or waiting to be (windows and counters). */
  async idle() {
    await this.cache.idle();
    if (this.counterTimer) {
      clearTimeout(this.counterTimer);
      this.counterTimer = null;
      this.countersLoading = this.loadCounters();
    }
    await this.countersLoading;
    await this.cache.idle();
  }

  dispose() {
    this.disposers.forEach((d) => d());
    clearTimeout(this.urlTimer);
    clearTimeout(this.counterTimer);
    clearTimeout(this.searchTimer);
  }

  /** The test and benchmark hook (`window.perfdashTimeline`). */
  hook() {
    const toOffset = (ns) => Number(parseNs(ns) - this.t0);
    return {
      ready: true,
      traceId: this.traceId,
      setRange: (startNs, endNs) => this.setRange(startNs, endNs),
      visibleRange: () => ({
        startNs: (this.t0 + BigInt(Math.round(this.view.start))).toString(),
        endNs: (this.t0 + BigInt(Math.round(this.view.end))).toString(),
        traceStartNs: this.t0.toString(),
        traceEndNs: (this.t0 + BigInt(this.span)).toString(),
      }),
      select: (eventId) => this.select(Number(eventId)),
      search: (q) => { this.searchBox.value = q; return this.runSearch(q); },
      nextMatch: (direction = 1) => this.stepMatch(direction),
      selectArea: (startNs, endNs) => {
        this.area = { start: toOffset(startNs), end: toOffset(endNs) };
        this.requestDraw();
        return this.loadArea();
      },
      lastArea: () => this.areaData || null,
      stats: () => ({ slices: this.lastStats.slices, labels: this.lastStats.labels, flows: this.lastStats.flows, mode: this.lastEntry ? this.lastEntry.mode : null, fetched: this.cache.fetched, cached: this.cache.entries.length, rows: this.layout.rows.length }),
      drawNow: () => { const t = performance.now(); const s = this.drawNow(); return { ms: performance.now() - t, slices: s.slices, labels: s.labels }; },
      isCached: (startNs, endNs) => this.cache.lookup(toOffset(startNs), toOffset(endNs), false).exact,
      prefetch: () => this.prefetchAround(),
      idle: () => this.idle(),
      slicesInView: () => this.slicesInView(),
      summaries: () => this.summaries(),
    };
  }

  setRange(startNs, endNs) {
    if (startNs === null || endNs === null || startNs === undefined || endNs === undefined) return this.go(0, this.span);
    return this.go(Number(parseNs(startNs) - this.t0), Number(parseNs(endNs) - this.t0));
  }

  /** Per GPU device, ns by category over the view as drawn in its header row. */
  summaries() {
    const out = [];
    for (const row of this.layout.rows) {
      if (row.type !== "header" || !row.node.device) continue;
      const sum = this.lastSummaries && this.lastSummaries.get(row.node.id);
      if (!sum) continue;
      const lane = row.node.lanes[0];
      const totals = Object.fromEntries(SUMMARY_CATEGORIES.map((c, i) => [c, sum.totals[i]]));
      out.push({ id: row.node.id, rank: lane ? lane.rank : null, device: row.node.device.device, totals });
    }
    return out;
  }

  /** What is drawn, for tests: [{id, lane, depth, name, start, dur}] of slices in view. */
  slicesInView() {
    const e = this.lastEntry;
    if (!e) return [];
    const out = [];
    const px = (this.width - SHELL_W) / (this.view.end - this.view.start);
    const labelled = this.lastStats.labelled || new Set();
    for (let i = 0; i < e.n; i++) {
      const a = e.start_ns[i];
      if (a + e.dur_ns[i] < this.view.start || a > this.view.end || !this.layout.laneY.has(e.lane[i])) continue;
      out.push({ id: e.id[i], lane: e.lane[i], depth: e.depth[i], name: e.names[e.name[i]], category: e.categories[e.category[i]], start: a, dur: e.dur_ns[i], count: e.count[i], mix: Array.from(e.mix.slice(4 * i, 4 * i + 4)), px: (Math.min(a + e.dur_ns[i], this.view.end) - Math.max(a, this.view.start)) * px, labelled: labelled.has(i) });
    }
    return out;
  }
}

function xSpan(t, area) {
  return ((area.end - area.start) * (t.width - SHELL_W)) / (t.view.end - t.view.start);
}

// ---- mounting: Dash renders pages client-side, so watch for the container -----------------

let current = null;

function mount() {
  const root = document.getElementById("perfdash-timeline");
  if (current && current.root === root && root) return;
  if (current) {
    current.dispose();
    current = null;
    delete window.perfdashTimeline;
  }
  if (!root || !root.dataset.trace) return;
  if (root.dataset.palette) setPalette(JSON.parse(root.dataset.palette));
  const timeline = new Timeline(root);
  current = timeline;
  timeline
    .start()
    .then(() => {
      if (current === timeline) window.perfdashTimeline = timeline.hook();
    })
    .catch((err) => {
      root.replaceChildren(el("p", { class: "notice notice-error" }, `Cannot draw this timeline: ${err.message}`));
    });
}

new MutationObserver(() => mount()).observe(document.documentElement, { childList: true, subtree: true });
mount();

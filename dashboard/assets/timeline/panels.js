// The panels under the canvas, built as DOM (text stays selectable and copyable): the
// selected event's details with its flows to follow, and the area selection's tables.

import { formatCount, formatDuration } from "./format.js";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function table(rows) {
  return el(
    "table",
    { class: "pdt-kv" },
    el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))),
  );
}

function argText(value) {
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

/** Where an event sits, relative to the trace start. */
function place(e, t0) {
  const start = Number(BigInt(e.start_ns) - t0);
  return `+${(start / 1e6).toFixed(3)} ms for ${formatDuration(e.dur_ns)}`;
}

/**
 * The details of `detail` (`GET .../events/{id}`) and its `flows`; `follow(id, lane,
 * startOffset)` selects another event, `laneLabel(lane)` names a lane.
 */
export function detailsPanel(detail, flows, t0, follow, laneLabel) {
  const e = detail.event;
  const rows = [
    ["Name", el("code", { class: "pdt-name" }, e.name)],
    ["Kind", e.kind],
    ["Time", place(e, t0)],
    ["Lane", e.lane_label || "–"],
    ["Event id", String(e.id)],
  ];
  if (e.correlation !== null && e.correlation !== undefined) rows.push(["Correlation", String(e.correlation)]);
  const parts = [el("h3", {}, "Selected event"), table(rows)];
  const link = (ev, label) =>
    el("a", { href: "#", class: "pdt-follow", onclick: (x) => { x.preventDefault(); follow(ev.id, ev.lane, Number(BigInt(ev.start_ns) - t0), ev.dur_ns); } }, label);
  const launch = [];
  if (detail.cpu_op) launch.push(["CPU op", link(detail.cpu_op, detail.cpu_op.name)]);
  if (detail.runtime) launch.push(["Launched by", link(detail.runtime, detail.runtime.name)]);
  if (launch.length) parts.push(el("h4", {}, "Launch"), table(launch));
  if (flows && flows.items.length) {
    const list = el("ul", { class: "pdt-flows" });
    const end = (id, lane, ns) => {
      const label = id === e.id ? "this event" : `${laneLabel(lane)} (event ${id})`;
      if (id === e.id) return el("span", {}, label);
      const go = (x) => { x.preventDefault(); follow(id, lane, Number(BigInt(ns) - t0), null); };
      return el("a", { href: "#", class: "pdt-follow", onclick: go }, label);
    };
    for (const f of flows.items.slice(0, 50)) {
      const what = f.kind === "collective" ? "peer collective" : "launch";
      list.append(el("li", {}, `${what}: `, end(f.from_id, f.from_lane, f.from_ns), " → ", end(f.to_id, f.to_lane, f.to_ns)));
    }
    const more = flows.items.length > 50 || flows.truncated ? el("p", { class: "muted small" }, `${formatCount(flows.items.length)}${flows.truncated ? "+" : ""} flows; the first 50 listed, all drawn`) : null;
    parts.push(el("h4", {}, "Flows"), list, more);
  }
  if (detail.kernel_stats) {
    const k = detail.kernel_stats;
    parts.push(
      el("h4", {}, "This kernel in the trace"),
      table([
        ["Calls", formatCount(k.count)],
        ["Total", formatDuration(k.total_ns)],
        ["Mean / min / max", `${formatDuration(k.mean_ns)} / ${formatDuration(k.min_ns)} / ${formatDuration(k.max_ns)}`],
      ]),
    );
  }
  const args = e.args || {};
  const keys = Object.keys(args);
  if (keys.length) {
    parts.push(el("h4", {}, "Args"), table(keys.map((k) => [k, el("code", {}, argText(args[k]))])));
  }
  return el("div", { class: "pdt-details" }, ...parts);
}

/** A sortable table: `columns` [{key, label, format, numeric}], rows of objects. */
export function sortableTable(columns, rows, sortKey, onSort) {
  const head = el(
    "tr",
    {},
    ...columns.map((c) =>
      el("th", { class: c.numeric ? "num sortable" : "sortable", "data-key": c.key, onclick: () => onSort(c.key) }, c.label + (sortKey === c.key ? " ▼" : "")),
    ),
  );
  const sorted = [...rows].sort((a, b) => {
    const x = a[sortKey];
    const y = b[sortKey];
    return typeof x === "number" ? y - x : String(x).localeCompare(String(y));
  });
  const body = sorted.map((r) => el("tr", {}, ...columns.map((c) => el("td", { class: c.numeric ? "num" : "" }, c.format ? c.format(r[c.key]) : r[c.key]))));
  return el("table", { class: "pdt-table" }, el("thead", {}, head), el("tbody", {}, ...body));
}

/** The area selection's tables (`GET .../timeline/area`), by name and by category. */
export function areaPanel(area, state, rerender) {
  const span = formatDuration(area.end_ns - area.start_ns);
  const names = sortableTable(
    [
      { key: "name", label: "Name" },
      { key: "category", label: "Category" },
      { key: "total_ns", label: "Time in range", numeric: true, format: formatDuration },
      { key: "wall_ns", label: "Wall duration", numeric: true, format: formatDuration },
      { key: "avg_ns", label: "Avg wall", numeric: true, format: formatDuration },
      { key: "count", label: "Occurrences", numeric: true, format: formatCount },
    ],
    area.names,
    state.sort,
    (key) => { state.sort = key; rerender(); },
  );
  const cats = sortableTable(
    [
      { key: "category", label: "Category" },
      { key: "total_ns", label: "Time in range", numeric: true, format: formatDuration },
      { key: "count", label: "Occurrences", numeric: true, format: formatCount },
    ],
    area.categories,
    state.catSort,
    (key) => { state.catSort = key; rerender(); },
  );
  const note = area.truncated ? el("p", { class: "muted small" }, "Only the names with the most time are listed.") : null;
  return el(
    "div",
    { class: "pdt-area" },
    el("h3", {}, `Area selection: ${span}`),
    el("div", { class: "pdt-area-tables" }, el("div", {}, names, note), el("div", {}, cats)),
  );
}

export { el };

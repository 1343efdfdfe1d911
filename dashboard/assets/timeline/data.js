// Windows of the trace, fetched in the compact column form and kept in a small cache.
//
// A view [s, e) of width w is asked for as [s - w/4, e + w/4], so a pan of a quarter
// draws from what is already here; after every draw the neighbours (one W press in, a
// width left and right, 2x out, 2.5x in around the pointer) are prefetched while the
// user is still looking. An entry serves a view when it covers it and is fine enough:
// raw events always are (they are exact); merged blocks when the entry is at most 3x
// wider than the view (pyramid levels are 8x apart, so the server would mostly answer at
// the same level anyway).

const PAD = 0.25;
const MAX_ITEMS = 6000;
const MAX_ENTRIES = 48;
const MAX_INFLIGHT = 2;

function toTyped(cols) {
  return {
    ...cols,
    lane: Int32Array.from(cols.lane),
    start_ns: Float64Array.from(cols.start_ns),
    dur_ns: Float64Array.from(cols.dur_ns),
    depth: Int32Array.from(cols.depth),
    name: Int32Array.from(cols.name),
    category: Int32Array.from(cols.category),
    id: Float64Array.from(cols.id),
    count: Float64Array.from(cols.count),
    busy_ns: Float64Array.from(cols.busy_ns),
    mix: Float64Array.from(cols.mix),
  };
}

export class WindowCache {
  constructor(traceId, t0, span, onArrive) {
    this.traceId = traceId;
    this.t0 = t0; // BigInt: the trace's first ns
    this.span = span; // ns, a Number
    this.onArrive = onArrive;
    this.entries = []; // most recently used last
    this.pending = new Map(); // key -> Promise
    this.queue = []; // prefetches waiting
    this.inflight = 0;
    this.fetched = 0;
  }

  padded(s, e) {
    const w = e - s;
    const lo = Math.max(0, Math.floor(s - w * PAD));
    const hi = Math.min(this.span + 1, Math.ceil(e + w * PAD));
    return [lo, Math.max(hi, lo + 1)];
  }

  /** The best entry for the view: one that serves it, else the finest that overlaps. */
  lookup(s, e, touch = true) {
    let good = null;
    let fallback = null;
    for (const entry of this.entries) {
      const covers = entry.start <= s && entry.end >= e;
      const width = entry.end - entry.start;
      const exact = entry.mode === "events" && !entry.truncated;
      if (covers && (exact || width <= 3 * (e - s))) {
        if (!good || width < good.end - good.start) good = entry;
      } else if (entry.start < e && entry.end > s) {
        const shown = Math.min(entry.end, e) - Math.max(entry.start, s);
        if (!fallback || shown > fallback.shown) fallback = { entry, shown };
      }
    }
    if (good && touch) this.touch(good);
    return { entry: good || (fallback && fallback.entry), exact: !!good };
  }

  touch(entry) {
    const i = this.entries.indexOf(entry);
    if (i >= 0) {
      this.entries.splice(i, 1);
      this.entries.push(entry);
    }
  }

  /** Fetch what serves [s, e) now (ahead of any prefetch); resolves with the entry. */
  load(s, e) {
    const found = this.lookup(s, e);
    if (found.exact) return Promise.resolve(found.entry);
    const [lo, hi] = this.padded(s, e);
    return this.request(lo, hi, true);
  }

  /** Prefetch [s, e) when a fetch slot is free, unless something already serves it. */
  prefetch(s, e) {
    const wanted = e - s;
    s = Math.max(0, s);
    e = Math.min(this.span + 1, e);
    if (e - s < wanted / 2 || this.lookup(s, e).exact) return;
    const [lo, hi] = this.padded(s, e);
    const key = `${lo}:${hi}`;
    if (this.pending.has(key) || this.queue.some((q) => q.key === key)) return;
    this.queue.push({ key, lo, hi });
    if (this.queue.length > 6) this.queue.shift();
    this.pump();
  }

  /** Resolves once no fetch is in flight or queued (prefetches included). */
  async idle() {
    while (this.pending.size || this.queue.length) {
      await Promise.all([...this.pending.values()].map((p) => p.catch(() => null)));
      if (!this.pending.size && this.queue.length) this.pump();
    }
  }

  pump() {
    while (this.inflight < MAX_INFLIGHT && this.queue.length) {
      const { lo, hi } = this.queue.shift();
      this.request(lo, hi, false).catch(() => {});
    }
  }

  request(lo, hi, urgent) {
    const key = `${lo}:${hi}`;
    const known = this.pending.get(key);
    if (known) return known;
    const start = (this.t0 + BigInt(lo)).toString();
    const end = (this.t0 + BigInt(hi)).toString();
    const url =
      `/api/v1/traces/${encodeURIComponent(this.traceId)}/timeline/columns` +
      `?start_ns=${start}&end_ns=${end}&max_items=${MAX_ITEMS}`;
    this.inflight += 1;
    const promise = fetch(url, { credentials: "same-origin" })
      .then(async (r) => {
        if (!r.ok) {
          const body = await r.json().catch(() => ({}));
          throw new Error(body.detail || `HTTP ${r.status}`);
        }
        return parseJson(await r.text());
      })
      .then((cols) => {
        const entry = toTyped(cols);
        entry.key = key;
        this.entries.push(entry);
        if (this.entries.length > MAX_ENTRIES) this.entries.shift();
        this.fetched += 1;
        this.onArrive(entry, urgent);
        return entry;
      })
      .finally(() => {
        this.inflight -= 1;
        this.pending.delete(key);
        this.pump();
      });
    this.pending.set(key, promise);
    return promise;
  }
}

// Absolute times (ns since some epoch, ~1.7e18 on Kineto's clock) exceed the 2^53 a
// JavaScript number holds exactly: any `..._ns` field of 16 or more digits is read as a
// string, for BigInt.
const BIG_NS = /("[a-z_]*_ns"\s*:\s*)(-?\d{16,})/g;

/** JSON text parsed with big ns values kept exact (as strings). */
export function parseJson(text) {
  return JSON.parse(text.replace(BIG_NS, '$1"$2"'));
}

/** Small JSON GET with the API's error detail. */
export async function getJson(url) {
  const r = await fetch(url, { credentials: "same-origin" });
  const text = await r.text();
  if (!r.ok) {
    let detail = `HTTP ${r.status}`;
    try {
      const body = JSON.parse(text);
      if (typeof body.detail === "string") detail = body.detail;
    } catch (err) {
      // not JSON: keep the status
    }
    throw new Error(detail);
  }
  return parseJson(text);
}

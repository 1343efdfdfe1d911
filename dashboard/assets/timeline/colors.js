// Colours: a hue band per category, a stable shade per name inside it, so kernels of one
// name look alike everywhere and compute, communication and copies never look alike.

const BANDS = {
  compute: [195, 245, 55, 48],
  communication: [0, 22, 70, 52],
  memcpy: [280, 310, 45, 55],
  memcpy_htod: [280, 290, 50, 55],
  memcpy_dtoh: [295, 305, 50, 55],
  memcpy_dtod: [305, 315, 45, 55],
  memcpy_ptop: [315, 325, 45, 55],
  memset: [48, 58, 75, 50],
  sync: [340, 350, 70, 45],
  cpu_op: [95, 150, 40, 45],
  runtime: [165, 185, 40, 45],
  python: [25, 40, 45, 45],
  annotation: [205, 225, 18, 62],
  other: [0, 0, 0, 60],
};

/** The base colour of a category (for legends and merged-block stripes). */
export function categoryColor(category) {
  const [lo, hi, s, l] = BANDS[category] || BANDS.other;
  return `hsl(${(lo + hi) / 2} ${s}% ${l}%)`;
}

export const CATEGORY_ORDER = Object.keys(BANDS);

function hash(text) {
  // FNV-1a: stable across sessions and browsers.
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const cache = new Map();

/** The colour of a slice: its category's band, its name's place in the band. */
export function sliceColor(name, category) {
  const key = category + "\u0000" + name;
  let colour = cache.get(key);
  if (colour === undefined) {
    const [lo, hi, s, l] = BANDS[category] || BANDS.other;
    const h = hash(name);
    const hue = lo + (h % 1000) / 1000 * (hi - lo);
    const light = l + ((h >>> 10) % 13) - 6;
    colour = `hsl(${hue.toFixed(1)} ${s}% ${light}%)`;
    cache.set(key, colour);
  }
  return colour;
}

/** Whether text on a category's slices should be dark. */
export function darkText(category) {
  const [, , , l] = BANDS[category] || BANDS.other;
  return l >= 58 || category === "memset";
}

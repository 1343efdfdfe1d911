// Colours: one base colour per category, the same as every other page's (the page hands
// dashboard/figures/theme.py's CATEGORY_COLORS to `setPalette`), and a stable shade of it
// per name, so kernels of one name look alike everywhere and compute, communication and
// copies never look alike.

// Until the page's palette arrives (it comes with the mount element), a neutral grey.
let palette = { other: "#868e96" };
// How far a name's shade may move from its category's colour: hue (degrees) and lightness
// (points). Categories with many names (kernels, ops) spread wider.
const SPREAD = { compute: [16, 6], cpu_op: [14, 6], communication: [8, 5] };
const DEFAULT_SPREAD = [6, 5];

/** Use the page's category colours ({category: "#rrggbb"}). */
export function setPalette(colours) {
  palette = { ...palette, ...colours };
  cache.clear();
  hsl.clear();
}

/** The base colour of a category (for legends and merged-block stripes). */
export function categoryColor(category) {
  return palette[category] || palette.other;
}

const hsl = new Map();

/** A "#rrggbb" colour as [hue, saturation %, lightness %]. */
function toHsl(hex) {
  let out = hsl.get(hex);
  if (out) return out;
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  const d = max - min;
  let h = 0;
  let s = 0;
  if (d > 0) {
    s = d / (1 - Math.abs(2 * l - 1));
    if (max === r) h = ((g - b) / d) % 6;
    else if (max === g) h = (b - r) / d + 2;
    else h = (r - g) / d + 4;
    h *= 60;
  }
  out = [(h + 360) % 360, s * 100, l * 100];
  hsl.set(hex, out);
  return out;
}

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

/** The colour of a slice: its category's colour, shaded by its name. */
export function sliceColor(name, category) {
  const key = category + "\u0000" + name;
  let colour = cache.get(key);
  if (colour === undefined) {
    const [hue, sat, light] = toHsl(categoryColor(category));
    const [dh, dl] = SPREAD[category] || DEFAULT_SPREAD;
    const h = hash(name);
    const shadeH = hue + (((h % 1000) / 1000) * 2 - 1) * dh;
    const shadeL = light + ((((h >>> 10) % 1000) / 1000) * 2 - 1) * dl;
    colour = `hsl(${((shadeH + 360) % 360).toFixed(1)} ${sat.toFixed(0)}% ${shadeL.toFixed(1)}%)`;
    cache.set(key, colour);
  }
  return colour;
}

/** Whether text on a category's slices should be dark (light colours: memset, idle...). */
export function darkText(category) {
  const hex = categoryColor(category);
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return 0.299 * r + 0.587 * g + 0.114 * b > 160;
}

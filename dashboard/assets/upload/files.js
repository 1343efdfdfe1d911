// What the user dropped or picked, as a flat list of { file, path }: folders are walked
// (DataTransfer entries for a drop, `webkitRelativePath` for the folder picker), hidden
// files (.DS_Store, ._foo) are left out, and the default trace name is worked out here.

const HIDDEN = /(^|\/)\./;

/** Files from a drop: entries must be taken before the first await, or the browser drops them. */
export async function droppedFiles(dataTransfer) {
  const items = Array.from(dataTransfer.items || []);
  const entries = items.map((item) => (item.webkitGetAsEntry ? item.webkitGetAsEntry() : null));
  if (!entries.some(Boolean)) {
    return Array.from(dataTransfer.files || []).map((file) => ({ file, path: file.name }));
  }
  const out = [];
  for (let i = 0; i < entries.length; i++) {
    if (entries[i]) await walk(entries[i], out);
    else if (items[i].kind === "file") {
      const file = items[i].getAsFile();
      if (file) out.push({ file, path: file.name });
    }
  }
  return out;
}

/** Files from an <input type=file> (with `webkitdirectory`, each keeps its folder path). */
export function pickedFiles(input) {
  return Array.from(input.files || [])
    .map((file) => ({ file, path: file.webkitRelativePath || file.name }))
    .filter((f) => !HIDDEN.test(f.path));
}

async function walk(entry, out) {
  if (HIDDEN.test(entry.name)) return;
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    out.push({ file, path: entry.fullPath.replace(/^\//, "") });
    return;
  }
  const reader = entry.createReader();
  // readEntries answers in batches (100 in Chromium) until it answers an empty one.
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    for (const child of batch) await walk(child, out);
  }
}

/** Several rank files' common stem: ddp_rank0.pt.trace.json.gz + ddp_rank1... -> "ddp". */
export function commonName(names) {
  if (!names.length) return "";
  if (names.length === 1) return names[0];
  let prefix = names[0];
  for (const n of names.slice(1)) {
    let i = 0;
    while (i < prefix.length && i < n.length && prefix[i] === n[i]) i++;
    prefix = prefix.slice(0, i);
  }
  prefix = prefix.replace(/[\d]+$/, "").replace(/rank$/i, "").replace(/[-_. ]+$/, "");
  return prefix || `${names[0]} + ${names.length - 1} more`;
}

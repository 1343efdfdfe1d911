// The traces page's upload area, mounted into `#traces-upload`: files and folders by drag
// and drop or by picker, several at a time, sent straight to the API's streaming route
// (POST /api/v1/traces) with a progress bar and an answer per file. Several files go up
// either as one multi-rank trace (one request, `ranks=true`: the API checks every file
// is a rank of one torch.profiler job and names the one that is not) or as separate
// traces (one request each, so one bad file does not stop the others). No file passes
// through the page server: a Dash callback would hold it whole, base64 inside JSON.
//
// Test hook: the root's `data-state` is idle | staged | uploading | done.

import { el } from "../timeline/panels.js";
import { formatBytes } from "../timeline/format.js";
import { commonName, droppedFiles, pickedFiles } from "./files.js";
import { detailText, getJson, postTraces } from "./send.js";

const NAME_MAX = 512; // the API's limits (backend/services/traces/lifecycle.py)
const PROJECT_MAX = 128;
const POLL_MS = 1500;
const POLL_LIMIT = 400; // ten minutes of polling a trace's status, then a link is enough
const RANKISH = /rank[-_]?\d+/i;
// A PyTorch memory snapshot sent with the trace of its run is attached to it (one request).
const SNAPSHOTISH = /\.(pickle|pkl)$/i;

class UploadArea {
  constructor(root) {
    this.root = root;
    this.items = []; // { file, path, row, bar, status, note }
    this.nameEdited = false;
    this.controller = {};
    this.build();
    this.setState("idle");
    this.loadProjects();
  }

  build() {
    const picker = (attrs) => el("input", { type: "file", multiple: "", hidden: "", ...attrs });
    this.fileInput = picker({ class: "upload-files-input" });
    this.folderInput = picker({ class: "upload-folder-input", webkitdirectory: "" });
    for (const input of [this.fileInput, this.folderInput]) {
      input.addEventListener("change", () => {
        this.add(pickedFiles(input));
        input.value = ""; // the same files may be picked again
      });
    }
    const chooser = (label, input) =>
      el("span", { class: "link", role: "button", tabindex: "0", onclick: (e) => { e.stopPropagation(); input.click(); } }, label);
    this.zone = el(
      "div",
      { class: "upload-box", onclick: () => this.fileInput.click() },
      el("div", { class: "upload-lead" }, "Drop trace files or folders here, or ", chooser("choose files", this.fileInput), " or ", chooser("a folder", this.folderInput)),
      el("div", { class: "muted small" }, "torch.profiler JSON(.gz), Nsight Systems sqlite, Nsight Compute CSV, rocprof v1/v2/v3, Instruments xctrace export XML, a PyTorch memory snapshot (.pickle), or a .zip/.tar.gz; the rank files of a DDP job can go up together as one multi-rank trace, and a trace with its run's memory snapshot as one trace. Parsing runs in the background."),
    );
    this.zone.addEventListener("dragover", (e) => {
      e.preventDefault();
      this.zone.classList.add("upload-box-over");
    });
    this.zone.addEventListener("dragleave", () => this.zone.classList.remove("upload-box-over"));
    this.zone.addEventListener("drop", (e) => {
      e.preventDefault();
      this.zone.classList.remove("upload-box-over");
      droppedFiles(e.dataTransfer).then((files) => this.add(files));
    });
    this.list = el("ul", { class: "upload-list" });
    this.form = this.buildForm();
    this.summary = el("div", { class: "upload-summary" });
    this.root.replaceChildren(this.fileInput, this.folderInput, this.zone, this.list, this.form, this.summary);
  }

  buildForm() {
    const radio = (value, label) =>
      el("label", { class: "upload-mode-choice" }, el("input", { type: "radio", name: "upload-mode", value, onchange: () => this.refresh() }), label);
    this.modeBox = el(
      "fieldset",
      { class: "upload-mode" },
      el("legend", {}, "Several files"),
      radio("ranks", "One multi-rank trace (the files are the ranks of one job)"),
      radio("separate", "Separate traces, one per file"),
    );
    this.projects = el("datalist", { id: "upload-project-options" });
    this.projectInput = el("input", { type: "text", class: "upload-project", list: "upload-project-options", maxlength: String(PROJECT_MAX), placeholder: "default", "aria-label": "Project" });
    this.nameInput = el("input", { type: "text", class: "upload-name", maxlength: String(NAME_MAX), "aria-label": "Trace name", oninput: () => { this.nameEdited = true; } });
    this.sendButton = el("button", { type: "button", class: "button button-primary upload-send", onclick: () => this.send() }, "Upload");
    this.clearButton = el("button", { type: "button", class: "button upload-clear", onclick: () => this.clear() }, "Clear");
    this.cancelButton = el("button", { type: "button", class: "button upload-cancel", hidden: "", onclick: () => this.cancel() }, "Cancel");
    const field = (label, input) => el("label", { class: "upload-field" }, el("span", { class: "upload-field-label" }, label), input);
    return el(
      "div",
      { class: "upload-form", hidden: "" },
      this.modeBox,
      el("div", { class: "upload-fields" }, field("Project", this.projectInput), field("Name", this.nameInput), this.projects),
      el("div", { class: "upload-actions" }, this.sendButton, this.cancelButton, this.clearButton),
    );
  }

  async loadProjects() {
    try {
      const projects = await getJson("/projects");
      this.projects.replaceChildren(...projects.items.map((p) => el("option", { value: p.name }, `${p.traces} trace${p.traces === 1 ? "" : "s"}`)));
    } catch (_e) {
      // No list (the API is down, or the caller may not read): free text still works.
    }
  }

  setState(state) {
    this.state = state;
    this.root.dataset.state = state;
    // The choices are fixed once the files go; "Clear" starts over.
    const fixed = state === "uploading" || state === "done";
    for (const input of this.form.querySelectorAll("input")) input.disabled = fixed;
    this.sendButton.hidden = state === "done";
    this.sendButton.disabled = state === "uploading";
  }

  mode() {
    const checked = this.modeBox.querySelector("input:checked");
    return this.items.length > 1 && checked ? checked.value : "separate";
  }

  // ---- staging ----------------------------------------------------------------------

  add(files) {
    if (this.state === "uploading" || !files.length) return;
    if (this.state === "done") this.clear();
    const seen = new Set(this.items.map((i) => `${i.path}:${i.file.size}`));
    for (const { file, path } of files) {
      if (seen.has(`${path}:${file.size}`)) continue;
      seen.add(`${path}:${file.size}`);
      this.items.push(this.row(file, path));
    }
    if (this.items.length > 1 && !this.modeBox.querySelector("input:checked")) {
      const snaps = this.items.filter((i) => SNAPSHOTISH.test(i.file.name)).length;
      const rankish = this.items.filter((i) => RANKISH.test(i.file.name)).length;
      const others = this.items.length - snaps;
      const ranks = snaps <= 1 && ((rankish === others && rankish > 0) || (snaps === 1 && others === 1));
      this.modeBox.querySelector(`input[value=${ranks ? "ranks" : "separate"}]`).checked = true;
    }
    this.setState("staged");
    this.refresh();
  }

  row(file, path) {
    const item = { file, path };
    item.status = el("span", { class: "upload-file-status muted small" }, "ready to upload");
    item.bar = el("div", { class: "progress-fill", style: "width: 0%" });
    item.note = el("div", { class: "upload-file-note" });
    const remove = el("button", { type: "button", class: "upload-remove", title: "Leave this file out", "aria-label": `Remove ${path}`, onclick: () => this.remove(item) }, "×");
    item.row = el(
      "li",
      { class: "upload-file", "data-file": file.name },
      el("div", { class: "upload-file-head" }, el("span", { class: "upload-file-name", title: path }, path), el("span", { class: "muted small nowrap" }, formatBytes(file.size)), item.status, remove),
      el("div", { class: "progress-track" }, item.bar),
      item.note,
    );
    this.list.append(item.row);
    return item;
  }

  remove(item) {
    if (this.state !== "staged") return;
    this.items = this.items.filter((i) => i !== item);
    item.row.remove();
    if (!this.items.length) this.clear();
    else this.refresh();
  }

  clear() {
    this.items = [];
    this.list.replaceChildren();
    this.summary.replaceChildren();
    this.nameEdited = false;
    this.nameInput.value = "";
    this.clearButton.textContent = "Clear";
    for (const r of this.modeBox.querySelectorAll("input")) r.checked = false;
    this.setState("idle");
    this.refresh();
  }

  refresh() {
    const n = this.items.length;
    this.form.hidden = n === 0;
    this.modeBox.hidden = n < 2;
    const separate = n > 1 && this.mode() === "separate";
    this.nameInput.disabled = separate || this.state === "uploading" || this.state === "done";
    this.nameInput.placeholder = separate ? "each trace is named after its file" : "";
    if (separate) this.nameInput.value = "";
    else if (!this.nameEdited) {
      // A snapshot rides on its trace: the trace files name the upload.
      const traces = this.items.map((i) => i.file.name).filter((n) => !SNAPSHOTISH.test(n));
      this.nameInput.value = commonName(traces.length ? traces : this.items.map((i) => i.file.name));
    }
    const snap = this.items.some((i) => SNAPSHOTISH.test(i.file.name));
    const together = snap ? `Upload as one trace with its memory snapshot` : `Upload as one trace of ${n} ranks`;
    const what = n < 2 ? "Upload" : separate ? `Upload ${n} traces` : together;
    this.sendButton.textContent = what;
  }

  // ---- sending ----------------------------------------------------------------------

  async send() {
    if (this.state !== "staged" || !this.items.length) return;
    this.setState("uploading");
    this.clearButton.disabled = true;
    this.cancelButton.hidden = false;
    this.summary.replaceChildren();
    for (const item of this.items) this.reset(item);
    const fields = { project: this.projectInput.value.trim() || null };
    let again = false; // a refused multi-rank upload: remove the wrong file, send again
    try {
      if (this.items.length > 1 && this.mode() === "ranks") again = !(await this.sendRanks(fields));
      else await this.sendSeparately(fields);
    } finally {
      this.cancelButton.hidden = true;
      this.clearButton.disabled = false;
      this.clearButton.textContent = again ? "Clear" : "Clear, upload more";
      this.setState(again ? "staged" : "done");
    }
  }

  async sendRanks(fields) {
    const items = this.items;
    const sizes = items.map((i) => i.file.size);
    const total = sizes.reduce((a, b) => a + b, 0);
    // One multipart body, the files in order: each file's share of the bytes sent so far.
    const progress = (loaded, sent) => {
      const scale = sent ? total / sent : 1; // the body's framing is a few bytes per file
      let offset = 0;
      items.forEach((item, k) => {
        const done = Math.max(0, Math.min(sizes[k], loaded * scale - offset));
        this.progress(item, sizes[k] ? done / sizes[k] : 1);
        offset += sizes[k];
      });
    };
    const answer = await postTraces(items.map((i) => i.file), { ...fields, ranks: "true", name: this.nameInput.value.trim() || null }, progress, this.controller);
    if (answer.status === 202) {
      for (const item of items) this.mark(item, "sent", `rank file of ${answer.body.duplicate ? "an existing" : "the new"} trace`);
      this.result(this.nameInput.value.trim() || commonName(items.map((i) => i.file.name)), answer.body, items, false);
      return true;
    }
    // The API names each wrong file first: "not the ranks of one job: a.csv: ...; b.json: ...".
    const text = detailText(answer);
    const parts = text.replace(/^not the ranks of one job: /, "").split("; ");
    const prefix = (item) => `${item.file.name}: `;
    for (const item of items) {
      const about = parts.filter((part) => part.startsWith(prefix(item))).map((part) => part.slice(prefix(item).length));
      this.fail(item, about.length ? about.join("; ") : "not sent: another file was refused", !about.length);
    }
    const hint = answer.status === 422 ? " Remove the wrong file (×) and upload again, or send them as separate traces." : "";
    this.summary.append(el("div", { class: "notice notice-error" }, "Nothing was uploaded: ", text, hint));
    return false;
  }

  async sendSeparately(fields) {
    const single = this.items.length === 1;
    for (const item of this.items) {
      if (this.cancelled) {
        this.fail(item, "not sent: cancelled", true);
        continue;
      }
      const name = single ? this.nameInput.value.trim() || null : null;
      const answer = await postTraces([item.file], { ...fields, name }, (loaded, sent) => this.progress(item, sent ? loaded / sent : 0), this.controller);
      if (answer.status === 202) {
        this.mark(item, "sent", "");
        this.result(name || item.file.name, answer.body, [item], true);
      } else {
        this.fail(item, detailText(answer));
      }
    }
    this.cancelled = false;
  }

  cancel() {
    this.cancelled = true;
    if (this.controller.abort) this.controller.abort();
  }

  progress(item, fraction) {
    const pct = Math.round(Math.min(1, Math.max(0, fraction)) * 100);
    item.bar.style.width = `${pct}%`;
    item.status.textContent = pct < 100 ? `uploading ${pct}%` : "sent, waiting for the API";
  }

  mark(item, status, note) {
    item.row.dataset.status = status;
    item.bar.style.width = "100%";
    item.status.textContent = status === "sent" ? "sent, parsing" : status;
    if (note) item.note.replaceChildren(el("span", { class: "muted small" }, note));
  }

  /** The trace's parse ended: its files' rows say how, as the summary line does. */
  settle(items, trace) {
    for (const item of items) {
      item.row.dataset.status = trace.status;
      item.status.textContent = trace.status === "ready" ? "ready" : "failed";
      if (trace.status === "failed") {
        item.row.classList.add("upload-file-error");
        item.note.replaceChildren(el("div", { class: "row-error upload-error" }, trace.error || "the parse failed"));
      }
    }
  }

  reset(item) {
    delete item.row.dataset.status;
    item.row.classList.remove("upload-file-error", "upload-file-held");
    item.status.textContent = "waiting";
    item.bar.style.width = "0%";
    item.note.replaceChildren();
  }

  /** `innocent`: the file itself was fine, another one stopped the upload. */
  fail(item, message, innocent = false) {
    item.row.dataset.status = innocent ? "not-sent" : "error";
    item.row.classList.add(innocent ? "upload-file-held" : "upload-file-error");
    item.status.textContent = innocent ? "not sent" : "error";
    item.bar.style.width = "0%";
    const note = el("div", { class: innocent ? "muted small" : "row-error upload-error" }, message);
    item.note.replaceChildren(note);
  }

  // ---- results ----------------------------------------------------------------------

  /** A line in the summary (and, for a file sent alone, next to it) that follows the
   * trace from queued to ready, with a link to it once it is ready, or its error. */
  result(name, accepted, items, linkOnRow) {
    const badge = el("span", { class: `badge badge-${accepted.status}` }, accepted.status);
    const facts = el("span", { class: "muted small" }, accepted.duplicate ? "uploaded before; nothing new stored" : "");
    const link = el("a", { href: `/traces/${accepted.id}`, class: "upload-trace-link" }, "Open the trace →");
    const line = el("div", { class: "upload-result", "data-trace-id": accepted.id }, el("span", { class: "upload-result-name" }, name), badge, facts, link);
    this.summary.append(line);
    if (linkOnRow) for (const item of items) item.note.replaceChildren(el("a", { href: `/traces/${accepted.id}` }, "Open the trace →"));
    const ended = (trace) => {
      badge.className = `badge badge-${trace.status}`;
      badge.textContent = trace.status;
      line.dataset.status = trace.status;
      this.settle(items, trace);
      if (trace.status === "ready") {
        facts.textContent = describe(trace);
        return;
      }
      // A failed parse has no trace to open: the error is the answer, in red.
      facts.className = "row-error upload-result-error";
      facts.textContent = trace.error || "the parse failed";
      link.remove();
    };
    this.follow(accepted.id, badge, line, ended, 0);
  }

  follow(id, badge, line, ended, polls) {
    if (polls > POLL_LIMIT || !line.isConnected) return;
    const again = () => setTimeout(() => this.follow(id, badge, line, ended, polls + 1), POLL_MS);
    getJson(`/traces/${encodeURIComponent(id)}`)
      .then((trace) => {
        if (trace.status === "ready" || trace.status === "failed") ended(trace);
        else {
          badge.className = `badge badge-${trace.status}`;
          badge.textContent = trace.status;
          line.dataset.status = trace.status;
          again();
        }
      })
      .catch(again);
  }
}

/** Format, ranks (a rank file lists every GPU its host saw, so GPUs would mislead), events. */
function describe(trace) {
  const ranks = new Set((trace.devices || []).map((d) => d.rank).filter((r) => r !== undefined));
  const events = Object.values(trace.event_counts || {}).reduce((a, b) => a + b, 0);
  const parts = [trace.format];
  if (ranks.size > 1) parts.push(`${ranks.size} ranks`);
  parts.push(`${events.toLocaleString("en-US")} events`);
  if (trace.project) parts.push(`project ${trace.project}`);
  return parts.filter(Boolean).join(" · ");
}

// ---- mounting: Dash renders pages client-side, so watch for the container -----------------

let current = null;

function mount() {
  const root = document.getElementById("traces-upload");
  if (!root || (current && current.root === root)) return;
  current = new UploadArea(root);
}

new MutationObserver(() => mount()).observe(document.documentElement, { childList: true, subtree: true });
mount();

// Talking to the API: the upload itself (XMLHttpRequest, the one browser API that reports
// upload progress), the projects for the form, and a trace's status after it was accepted.
// Same-origin requests carry the session cookie; a state-changing one also carries the
// session's CSRF token (the `_csrf_token` cookie, sent back as X-CSRFToken), as the API's
// cookie check requires (backend/api/cookies.py).

export const API = "/api/v1";

function csrfHeader() {
  const match = document.cookie.match(/(?:^|;\s*)_csrf_token=([^;]*)/);
  return match ? decodeURIComponent(match[1]) : null;
}

/**
 * POST /api/v1/traces with `files` (File objects, in order) and text `fields`.
 * `onProgress(loadedBytes, totalBytes)` follows the request body as it leaves.
 * Resolves to { status, body } (body: the parsed JSON, or null); status 0 if the request
 * never got an answer (network down, aborted). `controller.abort()` cancels it.
 */
export function postTraces(files, fields, onProgress, controller) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) if (v !== null && v !== undefined) form.append(k, v);
  for (const f of files) form.append("file", f, f.name);
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${API}/traces`);
    const token = csrfHeader();
    if (token) xhr.setRequestHeader("X-CSRFToken", token);
    xhr.responseType = "text";
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : null);
    xhr.onload = () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch (_e) {
        body = null;
      }
      resolve({ status: xhr.status, body });
    };
    xhr.onerror = () => resolve({ status: 0, body: null, detail: "cannot reach the API" });
    xhr.onabort = () => resolve({ status: 0, body: null, detail: "cancelled" });
    if (controller) controller.abort = () => xhr.abort();
    xhr.send(form);
  });
}

/** The API's error text: FastAPI's `detail` is a string, or a list of {loc, msg}. */
export function detailText(answer) {
  const detail = answer.body && answer.body.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d) => `${(d.loc || []).filter((p) => p !== "body").join(".")}: ${d.msg}`)
      .join("; ");
  }
  if (answer.detail) return answer.detail;
  return answer.status ? `the API answered ${answer.status}` : "no answer from the API";
}

export async function getJson(path) {
  const response = await fetch(`${API}${path}`, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

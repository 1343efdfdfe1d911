// The traces page's upload goes from the browser straight to the API's multipart route,
// POST /api/v1/traces, never through a Dash callback: the API streams the file to disk
// and refuses a caller who may not upload before it reads a byte, while a callback would
// hold the whole file, base64 inside JSON, in the page server's memory (and the callback
// endpoint takes no body over PERFDASH_MAX_JSON_BYTES). dcc.Upload hands over a data URL;
// the answer, or why there is none, goes to a dcc.Store that a server callback shows.
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  perfdash_traces: {
    upload: async function (contents, filename) {
      const noUpdate = window.dash_clientside.no_update;
      if (!contents) {
        return [noUpdate, noUpdate];
      }
      const name = filename || "trace";
      let file;
      try {
        file = await (await fetch(contents)).blob();
      } catch (e) {
        return [{ name: name, status: null, detail: "the browser sent unreadable data" }, null];
      }
      const form = new FormData();
      form.append("file", file, name);
      const csrf = document.cookie.match(/(?:^|;\s*)_csrf_token=([^;]*)/);
      const headers = csrf ? { "X-CSRFToken": decodeURIComponent(csrf[1]) } : {};
      try {
        const response = await fetch("/api/v1/traces", {
          method: "POST",
          body: form,
          headers: headers,
          credentials: "same-origin",
        });
        const body = await response.json().catch(function () { return null; });
        return [{ name: name, status: response.status, body: body }, null];
      } catch (e) {
        return [{ name: name, status: null, detail: "cannot reach the API: " + e }, null];
      }
    },
  },
});

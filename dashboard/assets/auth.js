// When a session ends while a page is open (expiry, logout elsewhere, a disabled user),
// the gate answers Dash's own requests with 401; go to the sign-in form instead of
// leaving a page whose callbacks silently fail. Dash's requests all start with "_dash-".
(function () {
  const original = window.fetch;
  window.fetch = async function (resource, init) {
    const response = await original.apply(this, arguments);
    const url = typeof resource === "string" ? resource : (resource && resource.url) || "";
    if (response.status === 401 && url.indexOf("_dash-") !== -1) {
      const here = window.location.pathname + window.location.search;
      window.location.assign("/login?next=" + encodeURIComponent(here));
    }
    return response;
  };
})();

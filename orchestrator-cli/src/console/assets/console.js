// The orchestrator console's only script: refreshes the element #live of the page every
// `data-refresh` ms, by fetching the page again and swapping in its #live when it changed.
// The HTML comes from the console's own server, which escapes all stored content.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) return;
  var every = parseInt(live.getAttribute("data-refresh"), 10) || 2000;
  var last = live.innerHTML;
  var badge = document.createElement("span");
  badge.className = "live-badge";
  badge.id = "live-badge";
  badge.textContent = "live";
  var header = document.querySelector("header");
  if (header) header.appendChild(badge);

  function refresh() {
    if (document.hidden) return schedule();
    fetch(window.location.href, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("live");
        if (fresh && fresh.innerHTML !== last) {
          last = fresh.innerHTML;
          live.innerHTML = fresh.innerHTML;
        }
        badge.textContent = "live";
        badge.className = "live-badge";
      })
      .catch(function () {
        badge.textContent = "offline";
        badge.className = "live-badge offline";
      })
      .then(schedule);
  }

  function schedule() {
    window.setTimeout(refresh, every);
  }

  schedule();
})();

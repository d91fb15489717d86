// High contrast on the portal's pages (templates/page.html loads this in <head>, before the page is drawn):
// the user's choice (the navigation bar's toggle, kept in this browser), else the system's prefers-contrast.
// Light or dark is JupyterHub's (its darkmode.js and toggle, prefers-color-scheme); the two combine.
(function () {
  "use strict";
  const KEY = "dsportal-contrast";  // "more", "normal", or absent: follow the system
  const system = window.matchMedia("(prefers-contrast: more)");
  let choice = null;  // the user's, as kept in this browser (or, where storage is blocked, on this page only)
  try { choice = window.localStorage.getItem(KEY); } catch (e) { /* storage blocked: the system's */ }
  function apply() {
    const more = choice ? choice === "more" : system.matches;
    if (more) { document.documentElement.setAttribute("data-dsportal-contrast", "more"); }
    else { document.documentElement.removeAttribute("data-dsportal-contrast"); }
    const toggle = document.getElementById("dsportal-contrast-toggle");
    if (toggle) { toggle.setAttribute("aria-pressed", String(more)); }
  }
  apply();
  try { system.addEventListener("change", apply); } catch (e) { /* an old browser: the choice made at load */ }
  window.addEventListener("DOMContentLoaded", function () {
    apply();
    const toggle = document.getElementById("dsportal-contrast-toggle");
    if (!toggle) { return; }
    toggle.addEventListener("click", function () {
      choice = document.documentElement.hasAttribute("data-dsportal-contrast") ? "normal" : "more";
      try { window.localStorage.setItem(KEY, choice); } catch (e) { /* this page only */ }
      apply();
    });
  });
})();

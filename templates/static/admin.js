// JupyterHub's admin page (/hub/admin, its React application; templates/admin.html loads this beside it) draws
// each user row's expand button with an icon alone, so a screen reader says "button" and nothing more (axe-core:
// button-name, critical), and points its aria-controls at an id no element has.  This names each such button after
// the row it opens and points it at the details it opens, as the application draws the rows, until JupyterHub
// does it itself.  The state (open or closed) is the button's own aria-expanded.

// The name of a row's expand button (pure): the user's, and the server's where the row is a named server's.
export function expandName(user, server) {
  return "Details of " + user + (server ? "'s server " + server : "");
}

function nameButtons(root) {
  root.querySelectorAll("tr.user-row button[data-testid$='-collapse-button']").forEach((button) => {
    const row = button.closest("tr");
    const user = row.querySelector("[data-testid^='user-name-div-']");
    const server = row.querySelector("[data-testid='user-row-server']");
    if (user && !button.hasAttribute("aria-label")) {
      button.setAttribute("aria-label", expandName(user.textContent.trim(), server ? server.textContent.trim() : ""));
    }
    // the button's aria-controls names the details it opens by an id nothing has (JupyterHub gives that element a
    // data-testid of the same value and an id of its own): pointed at that id, so that the reference holds
    // (axe-core: aria-valid-attr-value)
    const controls = button.getAttribute("aria-controls");
    if (controls && !document.getElementById(controls)) {
      const details = root.querySelector("[data-testid='" + CSS.escape(controls) + "']");
      if (details && details.id) { button.setAttribute("aria-controls", details.id); }
      else if (details) { details.id = controls; }
    }
  });
}

if (typeof document !== "undefined") {
  const root = document.getElementById("react-admin-hook");
  if (root) {
    nameButtons(root);
    new MutationObserver(() => nameButtons(root)).observe(root, {childList: true, subtree: true});
  }
}

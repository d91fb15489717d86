// JupyterHub's admin page (/hub/admin, its React application; templates/admin.html loads this beside it) draws
// each user row's expand button with an icon alone, so a screen reader says "button" and nothing more (axe-core:
// button-name, critical).  This names each such button after the row it opens, as the application draws the
// rows, until JupyterHub names them itself.  The state (open or closed) is the button's own aria-expanded.

// The name of a row's expand button (pure): the user's, and the server's where the row is a named server's.
export function expandName(user, server) {
  return "Details of " + user + (server ? "'s server " + server : "");
}

function nameButtons(root) {
  root.querySelectorAll("tr.user-row button[data-testid$='-collapse-button']:not([aria-label])").forEach((button) => {
    const row = button.closest("tr");
    const user = row.querySelector("[data-testid^='user-name-div-']");
    const server = row.querySelector("[data-testid='user-row-server']");
    if (user) { button.setAttribute("aria-label", expandName(user.textContent.trim(), server ? server.textContent.trim() : "")); }
  });
}

if (typeof document !== "undefined") {
  const root = document.getElementById("react-admin-hook");
  if (root) {
    nameButtons(root);
    new MutationObserver(() => nameButtons(root)).observe(root, {childList: true, subtree: true});
  }
}

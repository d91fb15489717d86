"""JupyterLab's launcher as a person sees it: which kernel cards it drew, and when (the page records it).

`KERNEL_CARDS_SCRIPT`, added to a browser context before JupyterLab's page
loads, records each change of the launcher's drawn kernel cards (its
"Notebook" section) as [epoch milliseconds, [display names, sorted]], from
the page's first frame: the very first set a page showed stays on record
however fast it was replaced.  The kernels a server offers are its
`/api/kernelspecs` answer (`display_names`).
"""

from __future__ import annotations

from collections.abc import Iterable

# Checked once per frame, for two minutes at most; a set of cards counts once laid out (a width).
KERNEL_CARDS_SCRIPT = """
(() => {
  const history = window.__dsportalKernelCards = [];
  const until = Date.now() + 120000;
  let last = '[]';
  const look = () => {
    const cards = [...document.querySelectorAll('.jp-Launcher .jp-LauncherCard[data-category="Notebook"]')];
    const names = cards.map(c => c.querySelector('.jp-LauncherCard-label').textContent.trim()).sort();
    const key = JSON.stringify(names);
    if (key !== last && (!cards.length || cards[0].getBoundingClientRect().width > 0)) {
      history.push([Date.now(), names]);
      last = key;
    }
    if (Date.now() < until) requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})();
"""
HISTORY = "window.__dsportalKernelCards || []"
# whether the launcher shows every name of the argument (a list)
SHOWS_ALL = """names => {
  const history = window.__dsportalKernelCards || [];
  const drawn = history.length ? history[history.length - 1][1] : [];
  return names.every(name => drawn.includes(name));
}"""


def display_names(kernelspecs: dict) -> list[str]:
    """The display names of a server's kernels, sorted, from its `/api/kernelspecs` answer."""
    return sorted(kernel["spec"]["display_name"] for kernel in kernelspecs["kernelspecs"].values())


def first_cards(history: list) -> list[str]:
    """The kernel cards the launcher drew first (none: it drew none)."""
    return next((sorted(names) for _, names in history if names), [])


def every_kernel_at(history: list, names: Iterable[str]) -> float | None:
    """When (epoch seconds) the launcher first showed a card of every one of `names`; None: it never did."""
    wanted = set(names)
    return next((at / 1000 for at, drawn in history if wanted <= set(drawn)), None)

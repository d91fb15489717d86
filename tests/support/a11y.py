"""axe-core's WCAG 2.x A and AA rules over what the browser tests show (issue: everyone can use it).

axe-core comes from the npm registry with the JupyterLab extension's own
development tools (spawner/labext/package.json, yarn.lock); the tests put it
into the page through the browser's protocol (`page.evaluate`), which no page's
Content-Security-Policy blocks.  A violation rated serious or critical fails
the test that saw it, with each element and what to change; moderate and
minor ones are kept for the report the session writes beside the screenshots
(`write_report`), and the docs' accessibility statement lists them with a reason.
What is checked: every page of the hub's (under /hub/) in full, and where a test
names it, one part of a JupyterLab page (the extension's panel or dialog, by a CSS
selector): JupyterLab's own parts are JupyterLab's (its WCAG tracker, #9399).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Page

from tests.support.cluster import ROOT

AXE_SCRIPT = ROOT / "spawner" / "labext" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")
BLOCKING = frozenset({"serious", "critical"})


@dataclass(frozen=True)
class Finding:
    """One rule an element broke, on one checked page."""

    page: str  # the name the test gave what it checked
    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]  # CSS selectors of the elements, as axe names them

    def words(self) -> str:
        shown = ", ".join(self.targets[:5]) + (f" and {len(self.targets) - 5} more" if len(self.targets) > 5 else "")
        return f"{self.page}: {self.impact} {self.rule} ({self.help}) at {shown}"


FOUND: list[Finding] = []  # moderate and minor findings of this test session, for the report


def findings(page_name: str, violations: list[dict]) -> list[Finding]:
    """axe's `violations` as findings of the page named `page_name`."""
    return [
        Finding(
            page=page_name,
            rule=v["id"],
            impact=v.get("impact") or "minor",
            help=v["help"],
            targets=tuple(" ".join(map(str, node["target"])) for node in v["nodes"]),
        )
        for v in violations
    ]


def blocking(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.impact in BLOCKING]


def axe_violations(page: Page, within: str | None = None) -> list[dict]:
    """axe-core's violations of the WCAG 2.x A and AA rules on the page, or inside the element `within` names."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SCRIPT.read_text())
    options = {"runOnly": {"type": "tag", "values": list(WCAG_TAGS)}, "resultTypes": ["violations"]}
    return page.evaluate(SETTLED_AXE_RUN, [within, options])


# axe-core on the page as it settles: transitions and animations off while it runs.  A button the test has just
# clicked (the pointer still on it) is on its way to its hover colours for 0.15 s (Bootstrap's .btn transition);
# read half-way, its text measured 2-3:1 against a background that ends at 4.7:1, and the check failed one run in
# a few.  Each state's own colours are checked: the hover's, once there, as the others.
SETTLED_AXE_RUN = """async ([within, options]) => {
  const settle = document.createElement("style");
  settle.textContent = "*, *::before, *::after { transition: none !important; animation: none !important; }";
  document.head.appendChild(settle);
  try {
    document.body.getBoundingClientRect();  // styles recomputed now, each element at its end state
    await new Promise((done) => requestAnimationFrame(() => done()));
    return (await axe.run(within ? {include: [within]} : document, options)).violations;
  } finally {
    settle.remove();
  }
}"""


def check_accessible(page: Page, name: str, within: str | None = None) -> list[Finding]:
    """Fails on a serious or critical violation of WCAG 2.x A/AA on the page (or in `within`); keeps the others
    for the report.  What was found."""
    found = findings(name, axe_violations(page, within))
    FOUND.extend(f for f in found if f.impact not in BLOCKING)
    barriers = blocking(found)
    assert not barriers, "barriers to people with disabilities (axe-core, WCAG 2.x A/AA):\n" + "\n".join(
        f.words() for f in barriers
    )
    return found


def checked_in_full(url: str) -> bool:
    """Whether a page at `url` is the hub's own, checked whole (JupyterLab's pages: only the parts a test names)."""
    path = url.split("://", 1)[-1].partition("/")[2]
    return path.startswith("hub/")


def write_report(folder: Path) -> Path:
    """accessibility.txt beside the screenshots: each moderate and minor finding once."""
    lines = sorted({f.words() for f in FOUND})
    path = folder / "accessibility.txt"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "Moderate and minor findings of axe-core (WCAG 2.x A/AA) in the browser tests: "
        + (f"{len(lines)}\n" if lines else "none\n")
        + "".join(line + "\n" for line in lines)
    )
    return path

"""Everyone can use it: the portal's pages in each theme, reflowed at 320 px and at 200 % zoom, and the whole
journey with the keyboard alone, in real Chromium on the dev cluster.

Every screenshot of a hub page is checked by axe-core first (tests/support/browser.py `shot`,
tests/support/a11y.py): these tests add the themes (light and dark, each also in high contrast, from the
browser's preferences and from the portal's own toggle), the widths, and a journey without a mouse: log in,
choose a partition, GPU type, GPUs and hours, start, reach JupyterLab, extend, share, stop, with the focus
visible at every step and never trapped.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB
from tests.support.demo import password_of

USER = "dave"  # the main lane's (tests/support/lanes.py)
ADMIN = "carol"  # the main lane's admin (hub.admin_groups)
THEMES = {  # name: (prefers-color-scheme, prefers-contrast)
    "light": ("light", "no-preference"),
    "dark": ("dark", "no-preference"),
    "contrast": ("light", "more"),
    "dark-contrast": ("dark", "more"),
}

# What the focused element shows of its focus: an outline or a ring (Bootstrap's is a box-shadow); "" when it
# shows one, else the element in words.  `document.activeElement` is the body when nothing has the focus.
FOCUS_SHOWN = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) { return "the page itself"; }
  const s = getComputedStyle(e);
  const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
  const ring = s.boxShadow && s.boxShadow !== "none";
  return outline || ring ? "" : e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " " + (e.textContent || "").trim().slice(0, 40);
}"""
FOCUSED = """() => {
  const e = document.activeElement;
  return !e || e === document.body ? "" : e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.name ? "[" + e.name + "]" : "");
}"""
# How many elements a person can reach with Tab on the page.
REACHABLE = """() => Array.from(document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex="-1"])'))
  .filter((e) => !e.disabled && e.getClientRects().length && getComputedStyle(e).visibility !== "hidden").length"""


def tab_to(page: Page, selector: str, limit: int = 60) -> None:
    """Tab (forwards) until the element `selector` names has the focus, the focus visible at every step."""
    path = []
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Tab")
        path.append(page.evaluate(FOCUSED))
        hidden = page.evaluate(FOCUS_SHOWN)
        assert not hidden or hidden == "the page itself", f"the focus is not visible on {hidden}"
    raise AssertionError(f"Tab never reached {selector} in {limit} presses: {' > '.join(path)}")


def log_in_by_keyboard(page: Page) -> None:
    page.goto(f"{HUB}/hub/login")
    tab_to(page, "#username_input")
    page.keyboard.type(USER)
    tab_to(page, "#password_input")
    page.keyboard.type(password_of(USER))
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/hub/(home|spawn)"))


def test_each_theme_follows_the_browser_and_has_no_barrier(browser, cluster):
    for theme, (scheme, contrast) in THEMES.items():
        context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme, contrast=contrast)
        page = context.new_page()
        page.goto(f"{HUB}/hub/login")
        html = page.locator("html")
        expect(html).to_have_attribute("data-bs-theme", scheme)
        if contrast == "more":
            expect(html).to_have_attribute("data-dsportal-contrast", "more")
        else:
            expect(html).not_to_have_attribute("data-dsportal-contrast", "more")
        shot(page, f"theme-{theme}-login", f"The login page in the {theme} theme.")
        log_in_by_keyboard(page)
        page.goto(f"{HUB}/hub/home")
        expect(page.locator("#dsportal-partitions li").first).not_to_have_text("Asking the scheduler...")
        shot(page, f"theme-{theme}-home", f"The home page without a session in the {theme} theme.")
        page.goto(f"{HUB}/hub/spawn/{USER}")
        expect(page.locator("#dsportal-when")).not_to_be_empty()
        shot(page, f"theme-{theme}-form", f"The session form in the {theme} theme.")
        context.close()


def test_the_high_contrast_toggle_is_the_users_choice_kept_in_the_browser(browser, cluster):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    page = context.new_page()
    log_in_by_keyboard(page)
    page.goto(f"{HUB}/hub/home")
    html, toggle = page.locator("html"), page.locator("#dsportal-contrast-toggle")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    tab_to(page, "#dsportal-contrast-toggle")
    page.keyboard.press("Enter")
    expect(html).to_have_attribute("data-dsportal-contrast", "more")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    page.goto(f"{HUB}/hub/dsportal/usage")  # another page: the choice is kept
    expect(html).to_have_attribute("data-dsportal-contrast", "more")
    shot(page, "theme-contrast-usage", "The usage page in high contrast, chosen with the navigation bar's toggle.")
    page.locator("#dsportal-contrast-toggle").click()
    expect(html).not_to_have_attribute("data-dsportal-contrast", "more")
    page.reload()
    expect(html).not_to_have_attribute("data-dsportal-contrast", "more")
    context.close()


def test_the_admins_pages_have_no_barrier_in_either_theme(browser, cluster):
    # JupyterHub's own admin page, as the portal serves it (templates/admin.html): its rows' expand buttons named,
    # its small links 24 px, its grey text readable in the dark theme; and the portal's cluster status
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        log_in(page, ADMIN, password_of(ADMIN))
        page.goto(f"{HUB}/hub/admin")
        expand = page.get_by_role("button", name=f"Details of {ADMIN}", exact=True)
        expect(expand).to_have_attribute("aria-expanded", "false")
        expand.focus()
        page.keyboard.press("Enter")
        expect(expand).to_have_attribute("aria-expanded", "true")
        expect(page.locator(f"#{ADMIN}-card-group")).to_be_visible()
        expect(expand).to_have_attribute("aria-controls", f"{ADMIN}-card-group")  # the details it opens
        shot(page, f"admin-{scheme}", f"JupyterHub's admin page in the {scheme} theme, a user's row opened.")
        page.goto(f"{HUB}/hub/dsportal/status")
        expect(page.locator("#dsportal-plot-gpus .main-svg").first).to_be_attached()
        shot(page, f"status-{scheme}", f"The cluster status page in the {scheme} theme.")
        context.close()


@pytest.mark.parametrize("width,scale", [(320, 1), (640, 2)], ids=["320px", "zoom-200"])
def test_the_pages_reflow_without_scrolling_sideways(browser, cluster, width, scale):
    # 200 % zoom of a 1280-px window is a 640-px-wide page of CSS pixels, each drawn twice as large
    context = browser.new_context(viewport={"width": width, "height": 800}, device_scale_factor=scale)
    page = context.new_page()

    def check(name: str) -> None:
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= width, f"the {name} page is {wide} px wide in a {width}-px window: it scrolls sideways"
        if name != "login" or scale == 1:
            shot(page, f"reflow-{width}-{name}", f"The {name} page {width} px wide (zoom {scale * 100} %).")

    page.goto(f"{HUB}/hub/login")  # before logging in: a logged-in user's login page is the home page
    check("login")
    log_in_by_keyboard(page)
    for name, path in {"home": "/hub/home", "form": f"/hub/spawn/{USER}", "usage": "/hub/dsportal/usage"}.items():
        page.goto(HUB + path)
        page.wait_for_load_state("networkidle")
        check(name)
    context.close()


def test_the_journey_with_the_keyboard_alone(browser, cluster):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    log_in_by_keyboard(page)
    page.goto(f"{HUB}/hub/home")

    # nothing traps the keyboard, and a refresh never drops the focus: Tab from the top stops at every control
    # (the page refreshes itself meanwhile) before it leaves the page's end
    page.wait_for_timeout(1_000)  # the first refresh drawn (what is free, the jobs)
    reachable, stops = page.evaluate(REACHABLE), []
    for _ in range(reachable + 20):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(FOCUSED))
        if not stops[-1]:
            break
        assert not page.evaluate(FOCUS_SHOWN), f"the focus is not visible on {stops[-1]}"
        # each control once: a focus sent back to the page's top would reach one again before the end
        again = page.evaluate(
            "() => { const e = document.activeElement, seen = e.hasAttribute('data-tabbed');"
            " e.setAttribute('data-tabbed', ''); return seen; }"
        )
        assert not again, f"Tab reached {stops[-1]} twice: {' > '.join(stops)}"
    assert not stops[-1], f"Tab never left the page's end: {' > '.join(stops)}"
    assert len(stops) - 1 >= reachable, f"Tab stopped at {len(stops) - 1} of {reachable} controls: {' > '.join(stops)}"

    # the form, by keyboard: the partition (a choice made and taken back), the GPU type, 1 GPU, 1 hour, Enter
    page.goto(f"{HUB}/hub/home")
    tab_to(page, "#dsportal-start-server")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Start your session")).to_be_visible()
    partition = page.locator("#dsportal-partition")
    tab_to(page, "#dsportal-partition")
    page.keyboard.press("ArrowDown")
    expect(partition).to_have_value("debug")
    page.keyboard.press("ArrowUp")
    expect(partition).to_have_value("sxm2")
    tab_to(page, "#dsportal-gpu-type")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#dsportal-gpu-type")).to_have_value("a100")
    tab_to(page, "input[name=gpus]:checked")
    page.keyboard.press("ArrowRight")
    expect(page.locator("input[name=gpus]:checked")).to_have_value("2")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("input[name=gpus]:checked")).to_have_value("1")
    tab_to(page, "#dsportal-hours")
    page.keyboard.press("Control+A")
    page.keyboard.type("1")
    expect(page.locator("#dsportal-summary")).to_have_text("1 GPU (A100 80 GB) · 8 cores · 48 GB RAM · 1 h on sxm2")
    shot(page, "keyboard-form", "The form filled in with the keyboard alone: the focus on the hours.")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/user/{USER}/lab"), timeout=180_000)
    expect(page.locator("#jp-main-dock-panel")).to_be_visible()

    # the home page's card: add an hour, share with carol, stop
    page.goto(f"{HUB}/hub/home")
    facts = page.locator("#dsportal-facts")
    expect(facts).to_contain_text("Time limit1 h")
    tab_to(page, "#dsportal-extend")
    page.keyboard.press("Enter")
    expect(facts).to_contain_text("Time limit2 h", timeout=30_000)
    tab_to(page, "#dsportal-share-toggle")
    # the page draws its cards anew at each refresh (every 10 s): the keyboard keeps its place
    page.wait_for_timeout(12_000)
    expect(page.locator("#dsportal-share-toggle")).to_be_focused()
    page.keyboard.press("Enter")
    tab_to(page, "#dsportal-share-form input[aria-label=Who]")
    page.keyboard.type("carol")
    tab_to(page, "#dsportal-share-form input[aria-label=Hours]")
    page.keyboard.press("Control+A")
    page.keyboard.type("1")
    shot(page, "keyboard-share", "Sharing with carol, typed: the focus on the hours, the warning above.")
    page.keyboard.press("Enter")
    expect(page.locator("#dsportal-shares")).to_contain_text("Shared with carol until", timeout=15_000)
    tab_to(page, "#dsportal-stop")
    page.keyboard.press("Enter")
    expect(page.locator("#dsportal-state")).to_have_text("not running", timeout=120_000)
    expect(page.locator("#dsportal-announce")).to_have_text("Your session has stopped.")
    context.close()

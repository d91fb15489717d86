"""The session's page opens its launcher and lists its files as soon as JupyterLab has restored its layout
(spawner/labext/src/session/), in real Chromium on the dev cluster.

JupyterLab's own handler opens the first launcher and shows the file browser only once its router has run every
route, and the last one ends with a save of the workspace (a PUT).  The tests hold that PUT: the launcher and the
files must show while it is held, which only the plugin does.  Once it is let through and JupyterLab's handler
has run, the page has one launcher, never two; a notebook brought back by the workspace keeps the page without a
launcher beside it, and so does a URL naming a notebook.  How much sooner the page is usable is the benchmark's to
say (tests/perf/bench_lab.py), not a test's.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import urlparse

from playwright.sync_api import BrowserContext, Page, Route, expect

from tests.support.browser import log_in, shot
from tests.support.cluster import url_for
from tests.support.demo import password_of

USER = "alice"
WORKSPACES = Path(f"/home/{USER}/.jupyter/lab/workspaces")
LAUNCHER = ".jp-Launcher"
TEMPLATES = ".jp-DirListing-item[title^='Name: templates']"
NOTEBOOK = "templates/pytorch-mnist.ipynb"
SAVES = re.compile(r"/lab/api/workspaces/")


class HeldSaves:
    """JupyterLab's saves of the workspace (PUT), held until `release`: its routing cannot end meanwhile."""

    def __init__(self, page: Page):
        self.page, self.held, self.released = page, [], False
        page.route(SAVES, self._hold)

    def _hold(self, route: Route) -> None:
        if route.request.method == "PUT" and not self.released:
            self.held.append(route)
        else:
            route.continue_()

    def wait_for_one(self) -> None:
        """Until JupyterLab has asked to save (its router is at its last route), within 30 s."""
        for _ in range(300):
            if self.held:
                return
            self.page.wait_for_timeout(100)
        raise AssertionError("JupyterLab never saved its workspace")

    def release(self, folder: str) -> None:
        """Let the held saves through (and any later one), then wait for JupyterLab's handler after routing: the
        save answered, then its listing of the file browser's `folder` ("" for the home folder), then the launcher
        check it makes right after."""
        self.released = True
        saved = lambda r: r.request.method == "PUT" and SAVES.search(r.url)  # noqa: E731
        listing = urlparse(url_for(f"/user/{USER}/api/contents/{folder}")).path.rstrip("/")
        listed = lambda r: r.request.method == "GET" and urlparse(r.url).path.rstrip("/") == listing  # noqa: E731
        with self.page.expect_response(listed, timeout=30_000), self.page.expect_response(saved, timeout=30_000):
            for route in self.held:
                route.continue_()
        self.page.evaluate("() => new Promise(done => setTimeout(done, 500))")
        self.page.unroute(SAVES, self._hold)


def tabs(page: Page) -> list[str]:
    return page.locator("#jp-main-dock-panel .lm-TabBar-tabLabel").all_inner_texts()


def alices_page(browser, cluster) -> tuple[BrowserContext, Page]:
    """Alice logged in, her session running, without a saved workspace."""
    shutil.rmtree(WORKSPACES, ignore_errors=True)
    cluster.start(USER, {"gpus": 0, "hours": 1})
    cluster.wait_ready(USER)
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    log_in(page, USER, password_of(USER))
    return context, page


def test_the_launcher_and_files_show_before_routing_ends_once_and_never_beside_a_restored_notebook(browser, cluster):
    context, page = alices_page(browser, cluster)
    saves = HeldSaves(page)
    page.goto(url_for(f"/user/{USER}/lab"))
    expect(page.locator(f"{LAUNCHER} .jp-LauncherCard").first).to_be_visible()
    expect(page.locator(TEMPLATES)).to_be_visible()
    saves.wait_for_one()
    assert tabs(page) == ["Launcher"]  # routing has not ended: the launcher is the plugin's
    shot(page, "session-page-early", "The launcher and the home folder while JupyterLab still saves its workspace")
    saves.release("")
    assert tabs(page) == ["Launcher"] and page.locator(LAUNCHER).count() == 1  # JupyterLab's handler added none

    # a notebook opened and saved in the workspace (launchers are not kept there), then the page loaded again
    page.locator(TEMPLATES).dblclick()
    kept = lambda r: r.request.method == "PUT" and "pytorch-mnist.ipynb" in (r.request.post_data or "")  # noqa: E731
    with page.expect_response(kept, timeout=30_000):
        page.locator(".jp-DirListing-item[title^='Name: pytorch-mnist.ipynb']").dblclick()
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    saves = HeldSaves(page)
    page.reload()
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    saves.wait_for_one()
    assert tabs(page) == ["pytorch-mnist.ipynb"]
    saves.release("templates")
    assert tabs(page) == ["pytorch-mnist.ipynb"] and page.locator(LAUNCHER).count() == 0
    shot(page, "session-page-restored", "The page loaded again: the notebook restored, no launcher beside it")
    context.close()


def test_a_url_naming_a_notebook_opens_it_without_a_launcher(browser, cluster):
    context, page = alices_page(browser, cluster)
    page.goto(url_for(f"/user/{USER}/lab/tree/{NOTEBOOK}"))
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()  # JupyterLab opens it after routing, then checks
    page.evaluate("() => new Promise(done => setTimeout(done, 500))")
    assert tabs(page) == ["pytorch-mnist.ipynb"] and page.locator(LAUNCHER).count() == 0
    context.close()

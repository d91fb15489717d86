"""The session's page opens its launcher and file browser as soon as JupyterLab has restored its layout
(spawner/labext/src/session/), in real Chromium on the dev cluster: one launcher, never two, however the page
was opened; a notebook restored from the workspace keeps the page without a launcher beside it, and so does a
URL naming a notebook.  Each test waits for JupyterLab's own routing to end (its save of the workspace, the PUT)
before it counts, since that is when JupyterLab would add a launcher of its own.  How much sooner the page is
usable is the benchmark's to say (tests/perf/bench_lab.py), not a test's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.perf.timeline import DRAWN_SCRIPT
from tests.support.browser import log_in, shot
from tests.support.cluster import url_for
from tests.support.demo import password_of

USER = "alice"
WORKSPACES = Path(f"/home/{USER}/.jupyter/lab/workspaces")
LAUNCHER = ".jp-Launcher"
NOTEBOOK = "templates/pytorch-mnist.ipynb"


def routed(page: Page, url: str) -> None:
    """Open `url` and wait until JupyterLab's router has finished with it (its state route saves the workspace
    last: the PUT)."""
    with page.expect_request(lambda r: r.method == "PUT" and "/lab/api/workspaces/" in r.url, timeout=90_000):
        page.goto(url)


def main_area_tabs(page: Page) -> list[str]:
    return page.locator("#jp-main-dock-panel .lm-TabBar-tabLabel").all_inner_texts()


def test_a_fresh_page_has_one_launcher_and_its_files_and_a_restored_notebook_has_none(browser, cluster):
    shutil.rmtree(WORKSPACES, ignore_errors=True)
    cluster.start(USER, {"gpus": 0, "hours": 1})
    cluster.wait_ready(USER)
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.add_init_script(DRAWN_SCRIPT)
    page = context.new_page()
    log_in(page, USER, password_of(USER))

    routed(page, url_for(f"/user/{USER}/lab"))
    expect(page.locator(f"{LAUNCHER} .jp-LauncherCard").first).to_be_visible()
    expect(page.locator(".jp-DirListing-item[title^='Name: templates']")).to_be_visible()
    assert page.evaluate("Boolean(window.__dsportalDrawn)")
    assert main_area_tabs(page) == ["Launcher"]
    assert page.locator(LAUNCHER).count() == 1
    shot(page, "session-page-fresh", "A fresh session page: one launcher, the home folder listed")

    # a notebook opened, then the page loaded again: the workspace brings the notebook back, and no launcher
    page.locator(".jp-DirListing-item[title^='Name: templates']").dblclick()
    page.locator(".jp-DirListing-item[title^='Name: pytorch-mnist.ipynb']").dblclick()
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    page.get_by_role("tab", name="Launcher").locator(".lm-TabBar-tabCloseIcon").click()
    expect(page.locator(LAUNCHER)).to_have_count(0)
    with page.expect_request(lambda r: r.method == "PUT" and "/lab/api/workspaces/" in r.url, timeout=30_000):
        pass  # the layout with the notebook alone saved to the workspace
    routed(page, url_for(f"/user/{USER}/lab"))
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    assert main_area_tabs(page) == ["pytorch-mnist.ipynb"]
    assert page.locator(LAUNCHER).count() == 0
    shot(page, "session-page-restored", "The page loaded again: the notebook restored, no launcher beside it")
    context.close()


def test_a_url_naming_a_notebook_opens_it_without_a_launcher(browser, cluster):
    shutil.rmtree(WORKSPACES, ignore_errors=True)
    cluster.start(USER, {"gpus": 0, "hours": 1})
    cluster.wait_ready(USER)
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    log_in(page, USER, password_of(USER))

    routed(page, url_for(f"/user/{USER}/lab/tree/{NOTEBOOK}"))
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    assert main_area_tabs(page) == ["pytorch-mnist.ipynb"]
    assert page.locator(LAUNCHER).count() == 0
    context.close()

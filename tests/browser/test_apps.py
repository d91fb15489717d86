"""Apps in real Chromium: alice opens her Streamlit app from its file, MLflow for a folder of runs and VS Code
from the launcher, each in its own tab, and uses each; a page of another origin cannot make her browser change
anything in an app (the session's cookies go with a same-site request, so the proxy checks the origin)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from tests.support.apps import FOLDER, prepare_folder
from tests.support.browser import log_in, shot
from tests.support.cluster import url_for
from tests.support.demo import password_of


def test_streamlit_mlflow_and_vscode_each_in_its_own_tab(browser, cluster):
    # what the apps' own pages ask for and are refused, by design (nothing the portal could serve)
    browser.allow(
        r"/ajax-api/2\.0/mlflow/users/current$",
        404,
        why="MLflow's page asks who is logged in to MLflow "
        "(its own login, which the portal does not turn on: the session's login guards it)",
    )
    browser.allow(
        r"/static/node_modules/vsda/",
        404,
        why="VS Code asks for Microsoft's closed signing module, which code-server does not ship",
    )
    prepare_folder()
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    log_in(page, "alice", password_of("alice"))
    page.wait_for_url(lambda url: "/hub/login" not in url)
    page.goto(url_for("/user/alice/lab/tree/apps-test?reset"))
    listing = page.locator(".jp-DirListing-content")
    expect(listing.get_by_text("hello.py", exact=True)).to_be_visible()

    # 1. her Streamlit app, from its file: type a name, see the answer
    listing.get_by_text("hello.py", exact=True).click(button="right")
    shot(page, "apps-open-as-app", "Right-click a Streamlit file: Open as app.")
    with context.expect_page() as new_tab:
        page.get_by_role("menuitem", name="Open as app").click()
    app = new_tab.value
    app.wait_for_url(re.compile(r"/user/alice/dsportal/apps/[0-9a-f]{12}/$"))
    expect(app.get_by_text("Hello from alice's Streamlit app")).to_be_visible()
    name = app.get_by_label("Your name")
    name.fill("Ada")
    name.press("Enter")
    expect(app.get_by_text("Nice to meet you, Ada")).to_be_visible()
    shot(app, "app-streamlit", "alice's Streamlit app in its own tab: she typed a name, the app answered.")

    # 2. MLflow for the folder of runs: the experiment and its run are there
    page.bring_to_front()
    listing.get_by_text("runs", exact=True).click(button="right")
    with context.expect_page() as new_tab:
        page.get_by_role("menuitem", name="Open MLflow").click()
    mlflow = new_tab.value
    mlflow.wait_for_url(re.compile(r"/user/alice/dsportal/apps/[0-9a-f]{12}/"))
    expect(mlflow.get_by_text("alice-experiment").first).to_be_visible()
    shot(mlflow, "app-mlflow", "MLflow's tracking UI for alice's folder of runs, in its own tab.")

    # a page of another origin (bob's session, same site) has alice's browser POST into her MLflow: refused;
    # the same request from her MLflow's own page goes through
    search = mlflow.url.split("#")[0] + "ajax-api/2.0/mlflow/experiments/search"
    browser.allow(r"/dsportal/apps/[0-9a-f]{12}/ajax-api/", 403, why="the cross-origin POST below")
    hostile = context.request.post(
        search, data={"max_results": 5}, headers={"Origin": url_for("/user/bob/").rsplit("/user/", 1)[0]}
    )
    assert hostile.status == 403, hostile.text()[:300]
    alices_origin = url_for("/user/alice/").rsplit("/user/", 1)[0]
    own = context.request.post(search, data={"max_results": 5}, headers={"Origin": alices_origin})
    assert own.status == 200 and "alice-experiment" in own.text()

    # 3. VS Code from the launcher, on the folder the file browser shows: open a file, edit it, save it
    page.bring_to_front()
    page.locator(".jp-FileBrowser [data-command='launcher:create']").click()
    with context.expect_page() as new_tab:
        page.locator(".jp-LauncherCard[title^='VS Code']:visible").first.click()
    code = new_tab.value
    code.set_default_timeout(90_000)
    code.wait_for_url(re.compile(r"/user/alice/dsportal/apps/[0-9a-f]{12}/"))
    expect(code.locator(".monaco-workbench")).to_be_visible()
    expect(code.locator(".explorer-viewlet").get_by_text("hello.py")).to_be_visible()
    code.locator(".explorer-viewlet").get_by_text("hello.py").click()
    editor = code.locator(".monaco-editor .view-lines").first
    expect(editor).to_contain_text("Hello from alice")
    editor.click()
    code.keyboard.press("Control+Home")
    code.keyboard.type("# edited in VS Code\n")
    code.keyboard.press("Control+S")
    saved = Path(FOLDER, "hello.py")
    cluster.wait(lambda: saved.read_text().startswith("# edited in VS Code\n"), 30, "VS Code saved the file")
    shot(code, "app-vscode", "VS Code in its own tab, on alice's folder: she edited hello.py and saved it.")
    # VS Code says, in red, that a closing tab leaves no time to disconnect; the session ends after the test
    browser.allow(r"Long running operations during shutdown are unsupported in the web", why="VS Code's tab closed")
    context.close()

"""Apps in real Chromium: alice opens her Streamlit app from its file, MLflow for a folder of runs and VS Code
from the launcher, each in its own tab, and uses each; a page of another origin cannot make her browser change
anything in an app (the session's cookies go with a same-site request, so the proxy checks the origin).

What an app's own page logs in red is the app's (VS Code says "An unknown error occurred", or what it could not
finish as its page is left, a different line each run): the `browser` fixture tells it from the portal's errors by
the page's address (tests/support/browser.py), and still fails on every request the portal answers with an error
and on every refusal the browser reports there."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from playwright.sync_api import expect

from spawner.jupyter.apps.proxy import is_session_cookie
from tests.support.apps import API, FOLDER, prepare_folder
from tests.support.browser import log_in, shot
from tests.support.cluster import url_for
from tests.support.demo import password_of

# on the shared storage, which alice's session on its node sees as this test on the head node does (a node's /tmp
# is that node's alone: there, the folder would not exist for her code-server, and the mark never reach the test)
BOBS_FOLDER = "/mnt/isilon/bobs-project"
TASK_MARK = "/mnt/isilon/bobs-task-ran"
BOBS_TASKS = json.dumps(
    {
        "version": "2.0.0",
        "tasks": [
            {
                "label": "hello",
                "type": "shell",
                "command": f"id > {TASK_MARK}",
                "runOptions": {"runOn": "folderOpen"},
            }
        ],
    }
)


def bobs_folder() -> None:
    """A folder of bob's, readable by all, whose VS Code settings run a task when it opens."""
    subprocess.run(["rm", "-rf", BOBS_FOLDER, TASK_MARK], check=True, timeout=30)
    for argv, text in (
        (["mkdir", "-p", f"{BOBS_FOLDER}/.vscode"], None),
        (["tee", f"{BOBS_FOLDER}/.vscode/tasks.json"], BOBS_TASKS),
        (["tee", f"{BOBS_FOLDER}/notes.txt"], "bob's notes\n"),
        (["chmod", "-R", "a+rX", BOBS_FOLDER], None),
    ):
        subprocess.run(
            ["sudo", "-u", "bob", *argv], input=text, text=True, stdout=subprocess.DEVNULL, check=True, timeout=30
        )


def test_streamlit_mlflow_and_vscode_each_in_its_own_tab(browser, cluster):
    bobs_folder()
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

    # her browser's own cookies (the hub's and the session's, __Host- with per-user origins) never reach an app:
    # a Dash app of hers that echoes what it is sent, opened in her browser
    status, dash = cluster.request("POST", API, {"kind": "auto", "target": "apps-test/board.py"}, timeout=120)
    assert status == 201, dash
    echo = context.new_page()
    echo.goto(url_for(dash["url"] + "echo"))
    seen = json.loads(echo.locator("body").inner_text())
    held = [c["name"] for c in context.cookies(url_for("/user/alice/"))]
    assert "__Host-jupyterhub-user-alice" in held and "_xsrf" in held, held  # what the browser would send
    # (the apps' own cookies, such as Streamlit's _streamlit_xsrf, go to every app of hers: one origin)
    leaked = [name for name in seen["cookies"] if is_session_cookie(name)]
    assert leaked == [] and "authorization" not in {k.lower() for k in seen["headers"]}, seen
    echo.close()

    # 2. MLflow for the folder of runs: the experiment and its run are there
    page.bring_to_front()
    listing.get_by_text("runs", exact=True).click(button="right")
    with context.expect_page() as new_tab:
        page.get_by_role("menuitem", name="Open MLflow").click()
    mlflow = new_tab.value
    mlflow.wait_for_url(re.compile(r"/user/alice/dsportal/apps/[0-9a-f]{12}/"))
    expect(mlflow.get_by_text("alice-experiment").first).to_be_visible()
    shot(mlflow, "app-mlflow", "MLflow's tracking UI for alice's folder of runs, in its own tab.")

    # a page of another origin of the site (here her session's own, which is not MLflow's) has her browser POST
    # into her MLflow with its cookies: refused; the same request from her MLflow's own page goes through
    search = mlflow.url.split("#")[0] + "ajax-api/2.0/mlflow/experiments/search"
    browser.allow(r"/dsportal/apps/[0-9a-f]{12}/ajax-api/", 403, why="the cross-origin POST below")
    post = """async (url) => {
        const r = await fetch(url, {method: "POST", credentials: "include", mode: "no-cors",
                                    headers: {"Content-Type": "text/plain"}, body: '{"max_results": 5}'});
        return r.type;
    }"""
    with page.expect_response(search) as refused:
        assert page.evaluate(post, search) == "opaque"
    assert refused.value.status == 403
    # MLflow is served at an origin of its own, not the session's (which holds her login)
    apps_origin = mlflow.url.split("/user/", 1)[0]
    assert apps_origin != url_for("/user/alice/").rsplit("/user/", 1)[0] and "//apps--" in apps_origin
    own = mlflow.evaluate(
        """async (url) => {
            const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                                        body: JSON.stringify({max_results: 5})});
            return [r.status, await r.text()];
        }""",
        search,
    )
    assert own[0] == 200 and "alice-experiment" in own[1], own

    # 3. VS Code from the launcher, on the folder the file browser shows: open a file, edit it, save it
    page.bring_to_front()
    page.locator(".jp-FileBrowser [data-command='launcher:create']").click()
    with context.expect_page() as new_tab:
        page.locator(".jp-LauncherCard[title^='VS Code']:visible").first.click()
    code = new_tab.value
    code.set_default_timeout(90_000)
    code.wait_for_url(re.compile(r"/user/alice/dsportal/apps/[0-9a-f]{12}/"))
    expect(code.locator(".monaco-workbench")).to_be_visible()
    assert "//apps--" in code.url, code.url  # VS Code, its webviews with it, at the apps' own origin
    # Workspace Trust is on: VS Code asks once whether alice trusts her own folder
    trust = code.get_by_role("button", name=re.compile("Yes, I trust the authors"))
    expect(trust).to_be_visible()
    shot(code, "app-vscode-trust", "VS Code asks alice whether she trusts the folder's authors (Workspace Trust).")
    trust.click()
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

    # bob's folder (any folder others can write to) asks VS Code to run a task when it opens: alice opens it,
    # does not trust it, and nothing runs (without Workspace Trust it ran as her at once)
    code.goto(code.url.split("?")[0] + f"?folder={BOBS_FOLDER}")
    expect(code.locator(".explorer-viewlet").get_by_text("notes.txt")).to_be_visible()  # the folder is open
    code.get_by_role("button", name=re.compile("No, I don't trust the authors")).click()
    expect(code.locator(".monaco-workbench").get_by_text(re.compile("Restricted Mode")).first).to_be_visible()
    shot(code, "app-vscode-restricted", "bob's folder in alice's VS Code: Restricted Mode, its task did not run.")
    assert not Path(TASK_MARK).exists(), "bob's task ran as alice"

    # VS Code's tab closed, the others left open and untouched: their pages' own background requests (MLflow
    # refreshes, Streamlit checks its server) are no use of the session, so its last use stays put.  JupyterLab's
    # tab closes too: it reports alice's clicks in it (use, rightly) up to 30 s later, at a moment of its own
    code.close()
    page.close()

    def last_use() -> str:
        return cluster.request("GET", "/user/alice/api/status")[1]["last_activity"]

    before = last_use()
    # the events that would count: a background request of each open app page's own (a script's fetch, as their
    # refreshes and checks are), each answered by the app through the session before the session is asked again
    for tab in (app, mlflow):
        status = tab.evaluate("async () => (await fetch(location.pathname, {cache: 'no-store'})).status")
        assert status == 200, (tab.url, status)
    assert last_use() == before, "an open, untouched app tab counted as use of the session"
    context.close()


def test_a_page_an_app_renders_cannot_act_with_the_sessions_login(browser, cluster):
    """What an app renders may not be its author's (a notebook's stored outputs in VS Code, someone's page in a
    Dash app): its script runs at the session's apps' own origin, where it reads none of the session's cookies,
    reaches none of its API and writes none of its files (on the session's origin it listed and wrote them)."""
    prepare_folder()
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    alices_origin = url_for("/user/alice/").rsplit("/user/", 1)[0]
    # the script's attempts, refused as they should be: the browser says so in red
    browser.allow(r"/user/alice/api/contents/", why="the hostile page's requests for alice's files, refused")
    browser.allow(r"blocked by CORS policy", why="the hostile page's requests to the session's origin")
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    log_in(page, "alice", password_of("alice"))
    page.wait_for_url(lambda url: "/hub/login" not in url)
    page.goto(url_for("/user/alice/lab/tree/apps-test"))  # the session's origin holds her login and _xsrf now
    status, dash = cluster.request("POST", API, {"kind": "auto", "target": "apps-test/board.py"}, timeout=120)
    assert status == 201, dash
    # her VS Code open too (her browser holds its pass): it serves any file she can read, her session's token
    # in its processes' environments among them
    status, vscode = cluster.request("POST", API, {"kind": "vscode", "target": "apps-test"}, timeout=120)
    assert status == 201, vscode
    code = context.new_page()
    code.goto(url_for(vscode["url"]))
    code.wait_for_url(re.compile(r"^https://apps--[0-9a-f]{24}\.[^/]+/user/alice/dsportal/apps/[0-9a-f]{12}/"))
    browser.allow(r"vscode-remote-resource", why="the hostile page's reads of VS Code's files, refused")
    browser.allow(r"/static/node_modules/vsda/", 404, why="VS Code asks for Microsoft's closed signing module")
    hostile = context.new_page()
    hostile.goto(url_for(dash["url"] + "hostile?session=" + alices_origin + "&other=" + code.url.split("?")[0]))
    out = hostile.locator("#out")
    expect(out).not_to_have_text("running")
    seen = json.loads(out.inner_text())
    shot(hostile, "app-hostile-page", "A page an app renders, trying alice's login: nothing of it reached.")
    assert seen["origin"] != alices_origin and seen["origin"].startswith("https://apps--"), seen
    assert "_xsrf" not in seen["cookie"] and "jupyterhub" not in seen["cookie"], seen
    assert seen["list_here"] != 200 and seen["write_here"] not in (200, 201), seen
    assert seen["list_session"] == "blocked" and seen["write_session"] == "blocked", seen
    # nor another app's: each app is its own origin (one shared by her apps let this page read her files there)
    assert seen["origin"] != code.url.split("/user/", 1)[0], seen
    assert seen["other_app"] == "blocked" and seen["other_app_here"] != 200, seen
    assert not Path(FOLDER, "pwned.txt").exists(), "an app's page wrote a file as alice"
    # the app's own origin is no door to her session: its API is not served there
    assert cluster.request("GET", "/user/alice/api/contents/apps-test")[0] == 200  # (with her token, at her origin)
    context.close()

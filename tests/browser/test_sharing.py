"""Several sessions and sharing one, in two real browsers on the dev cluster.

alice runs two sessions at once (the unnamed one and "train", started from her
home page with a name); each has its own card, job and JupyterLab.  She shares
"train" with bob from the card, where the page says that bob will run code as
her.  bob sees it on his home page, opens it, and both edit one notebook at
once: what bob types appears in alice's open notebook.  The session log says
bob joined.  alice revokes: bob's next request is refused and his open
connection is closed by the session within seconds, and the session's token is
replaced: a fresh login of alice's to the session (its OAuth secret is that
token) still goes through.  dave, never shared with, never gets in.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, url_for
from tests.support.demo import password_of
from tests.support.http import wait_until
from tests.support.jobs import JobsClient

NOTEBOOK = "shared/together.ipynb"

# opens a kernel websocket in bob's page of alice's session and records how it ends
OPEN_SOCKET = """async (base) => {
  const xsrf = decodeURIComponent((document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || "");
  const r = await fetch(base + "api/kernels", {method: "POST", credentials: "include",
    headers: {"X-XSRFToken": xsrf, "Content-Type": "application/json"}, body: JSON.stringify({name: "python3"})});
  const kernel = await r.json();
  const url = base.replace("https://", "wss://") + "api/kernels/" + kernel.id + "/channels";
  window.guestSocket = {opened: false, closed: null};
  const ws = new WebSocket(url);
  ws.onopen = () => { window.guestSocket.opened = true; };
  ws.onclose = (e) => { window.guestSocket.closed = e.code; };
  return kernel.id;
}"""


def status_of(page, url: str) -> int:
    """What a GET of `url` from the page's JavaScript answers (with the XSRF token, as JupyterLab sends it: without
    it the session takes no cookie, and every such request would be a 403 whoever made it)."""
    return cluster_status(page, url, "GET")


def logged_in(context, user: str):
    """A page of `context`, logged in as `user` and done with the login's own redirects."""
    page = context.new_page()
    log_in(page, user, password_of(user))
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=60_000)
    page.wait_for_load_state()
    return page


def authorize_if_asked(page) -> None:
    """JupyterHub asks a guest to authorize access to another user's server once (its OAuth page)."""
    button = page.locator("form input[type=submit][value='Authorize'], form button:has-text('Authorize')")
    # the click before only began the way there (redirects through the hub): wait for where it ends
    expect(button.or_(page.locator(".jp-LabShell")).first).to_be_attached(timeout=60_000)
    if button.count():
        shot(page, "sharing-authorize", "JupyterHub asks bob to let alice's shared session know who he is.")
        button.first.click()


def test_two_sessions_and_a_shared_one_edited_together(browser, cluster):
    alice = JobsClient.for_user("alice")
    alice.write(
        NOTEBOOK,
        '{"cells": [{"cell_type": "code", "execution_count": null, "id": "c1", "metadata": {}, '
        '"outputs": [], "source": ["# together\\n"]}], "metadata": {"kernelspec": {"display_name": "Python 3", '
        '"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}',
    )
    for user in ("bob", "dave"):
        cluster.ensure_user(user)
    cluster.start("alice", {"gpus": 0, "hours": 1})

    owner = browser.new_context(viewport={"width": 1366, "height": 900})
    page = logged_in(owner, "alice")
    # the login leads to her starting session's page, which takes her into it once it is ready
    page.wait_for_url(re.compile(r".*/user/alice/lab.*"), timeout=120_000)
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state")).to_have_text("running", timeout=30_000)
    # a second session: a name is required now that the unnamed one runs
    page.locator("#dsportal-start-server").click()
    expect(page.locator("#dsportal-name-error")).to_contain_text("Give the new session a name")
    page.locator("#dsportal-new-name").fill("Train!")
    page.locator("#dsportal-start-server").click()
    expect(page.locator("#dsportal-name-error")).to_contain_text("cannot be called")
    page.locator("#dsportal-new-name").fill("train")
    page.locator("#dsportal-start-server").click()
    page.wait_for_url(re.compile(r".*/hub/spawn/alice/train"))
    expect(page.get_by_role("heading", name="Start your session")).to_be_visible()
    page.locator("label[for=dsportal-gpus-0]").click()
    page.get_by_role("button", name="Start").click()
    # the start's page takes her into the new session once it is ready (going home before would race it)
    page.wait_for_url(re.compile(r".*/user/alice/train/lab.*"), timeout=120_000)
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state--train")).to_have_text("running", timeout=30_000)
    expect(page.locator("#dsportal-state")).to_have_text("running")
    jobs = [page.locator(sel + " dd").first.inner_text() for sel in ("#dsportal-facts", "#dsportal-facts--train")]
    assert jobs[0] != jobs[1], jobs  # each its own Slurm job
    shot(page, "sessions-two", "alice's home page with two sessions at once, each its own card and Slurm job.")

    # alice shares "train" with bob from its card, for one hour; the page says what that means
    page.locator("#dsportal-share-toggle--train").click()
    form = page.locator("#dsportal-share-form--train")
    expect(form).to_contain_text("run code as you, in your files")
    form.locator("select").select_option("user")
    form.locator("input[aria-label=Who]").fill("nobody")
    browser.allow(r"/hub/api/dsportal/shares$", 400, why="the test shares with a user the portal does not know")
    form.locator("button[type=submit]").click()
    expect(page.locator("#dsportal-action-error--train")).to_contain_text("There is no portal user called 'nobody'")
    form.locator("input[aria-label=Who]").fill("bob")
    form.locator("input[aria-label=Hours]").fill("1")
    shot(
        page,
        "sharing-form",
        "alice shares her train session with bob; the page warns he runs code as her.",
        errors_expected=False,
    )
    form.locator("button[type=submit]").click()
    expect(page.locator("#dsportal-shares--train")).to_contain_text("Shared with bob until", timeout=15_000)

    # bob sees it on his home page and opens it
    guest = browser.new_context(viewport={"width": 1366, "height": 900})
    bob = logged_in(guest, "bob")
    bob.goto(f"{HUB}/hub/home")
    shared = bob.locator(".dsportal-shared-session[data-owner=alice]")
    expect(shared).to_contain_text("alice shares the session", timeout=30_000)
    shot(bob, "sharing-guest-home", "bob's home page: alice's train session is shared with him, with an Open button.")
    shared.locator("a").click()
    authorize_if_asked(bob)
    bob.wait_for_url(re.compile(r".*/user/alice/train/lab.*"), timeout=60_000)

    # both open the same notebook; what bob types appears in alice's
    # ?reset: only this notebook open (alice's JupyterLab workspace, shared by her sessions, may hold others)
    for p in (page, bob):
        p.goto(url_for(f"/user/alice/train/lab/tree/{NOTEBOOK}?reset"))
    cell = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content"
    for p in (page, bob):
        expect(p.locator(cell).first).to_contain_text("together", timeout=60_000)
    bob.locator(cell).first.click()
    bob.keyboard.press("End")
    bob.keyboard.type("  # bob was here")
    expect(page.locator(cell).first).to_contain_text("bob was here", timeout=30_000)
    shot(page, "sharing-together", "alice's notebook shows, live, what bob typed in the shared session.")

    log = Path(f"/home/alice/.dsportal-session-{jobs[1]}.log")
    wait_until(lambda: "bob joined alice's session" in log.read_text(errors="replace"), 30, "bob's join in the log")

    # bob may not extend alice's session (nor stop it: the hub gives him no such scope)
    browser.allow(r"/user/alice/train/dsportal/session/extend", 403, why="bob, a guest, asks to extend alice's session")
    assert cluster_status(bob, url_for("/user/alice/train/dsportal/session/extend"), "POST") == 403

    # dave, never shared with, never gets in
    outsider = browser.new_context()
    dave = logged_in(outsider, "dave")
    browser.allow(r"/user/alice/train/", 403, why="dave was never shared with: the hub refuses him")
    browser.allow(
        r"/hub/api/oauth2/authorize\?client_id=jupyterhub-user-alice-train",
        403,
        why="dave (never shared with) and, after the revoke, bob: the hub does not let them log in to the session",
    )
    dave.goto(url_for("/user/alice/train/lab"))
    expect(dave.locator("body")).to_contain_text("403", timeout=30_000)

    # alice revokes: bob's open connection closes and his next request is refused, within seconds
    base = url_for("/user/alice/train/")
    bob.evaluate(OPEN_SOCKET, base)
    wait_until(lambda: bob.evaluate("window.guestSocket.opened"), 30, "bob's kernel websocket open")
    assert status_of(bob, base + "api/contents/") == 200  # bob is in, until the revoke
    page.goto(f"{HUB}/hub/home")
    started = time.monotonic()
    browser.allow(r"/user/alice/train/", 403, why="alice revoked bob's share: the session refuses him")
    browser.allow(r"wss://alice\.localhost:8000/user/alice/train/", why="bob's JupyterLab reconnects after the revoke")
    page.locator("#dsportal-shares--train .dsportal-share[data-share='user:bob'] button").click()
    expect(page.locator("#dsportal-shares--train")).to_have_count(0, timeout=15_000)
    wait_until(lambda: bob.evaluate("window.guestSocket.closed") == 4403, 20, "bob's websocket closed by the session")
    wait_until(lambda: status_of(bob, base + "api/contents/") == 403, 10, "bob refused")
    print(f"revoke to bob cut off: {time.monotonic() - started:.1f} s")
    wait_until(lambda: "bob's access ended" in log.read_text(errors="replace"), 30, "the cut-off in the log")

    # the revoke replaced the session's token, which is also the secret of its logins (JupyterHub's OAuth): a
    # fresh login of alice's to the session goes through, without a restart of the session
    again = browser.new_context(viewport={"width": 1366, "height": 900})
    fresh = logged_in(again, "alice")
    fresh.goto(url_for("/user/alice/train/lab"))
    expect(fresh.locator(".jp-LabShell")).to_be_attached(timeout=60_000)
    assert status_of(fresh, url_for("/user/alice/train/api/contents/")) == 200
    for context in (owner, guest, outsider, again):
        context.close()


def cluster_status(page, url: str, method: str) -> int:
    return page.evaluate(
        """async ([u, m]) => {
          const xsrf = decodeURIComponent((document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || "");
          return (await fetch(u, {method: m, credentials: "include", headers: {"X-XSRFToken": xsrf}})).status;
        }""",
        [url, method],
    )

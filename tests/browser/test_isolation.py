"""One user's pages cannot reach another's session: each user's server is its own origin (subdomains).

The attack: alice, logged in with her session running, opens a page on bob's
origin (what bob's session serves is bob's to choose).  Script on that page
tries to read alice's files and to start a kernel in her session.  Before
subdomains both pages shared one origin and the script succeeded, as the
control at the end shows from a page on alice's own origin.
"""

from __future__ import annotations

from tests.support.browser import log_in
from tests.support.cluster import url_for
from tests.support.demo import password_of

ATTACK = """async (target) => {
  // a script of the page's origin sees that origin's cookies, the _xsrf token among them
  const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || "";
  const headers = {"X-XSRFToken": decodeURIComponent(xsrf)};
  const out = {};
  try {
    const r = await fetch(target + "api/contents/", {credentials: "include", headers});
    out.read = r.status + " " + (await r.text()).slice(0, 200);
  } catch (e) { out.read = "blocked: " + e.name; }
  try {
    const r = await fetch(target + "api/kernels", {method: "POST", credentials: "include", headers,
                                                    body: JSON.stringify({name: "python3"})});
    out.kernel = r.status + " " + (await r.text()).slice(0, 200);
  } catch (e) { out.kernel = "blocked: " + e.name; }
  return out;
}"""


def test_a_page_on_bobs_origin_cannot_read_or_drive_alices_session(browser, cluster):
    for user in ("alice", "bob"):
        cluster.start(user, {"gpus": 0, "hours": 1})
    cluster.wait_ready("alice")
    cluster.wait_ready("bob")
    context = browser.new_context()
    page = context.new_page()
    log_in(page, "alice", password_of("alice"))
    page.goto(url_for("/user/alice/lab"))  # alice uses her session: her browser holds its cookies
    page.wait_for_url("**/user/alice/lab**")
    kernels_before = cluster.request("GET", "/user/alice/api/kernels")[1]

    page.goto(url_for("/user/bob/static/favicon.ico"))  # any page of bob's origin; its script is bob's
    browser.allow(
        r"https://alice\.localhost:8000/user/alice/api/",
        why="the attack: the browser blocks bob's page from alice's origin (CORS), which is what this test checks",
    )
    result = page.evaluate(ATTACK, url_for("/user/alice/"))
    assert result["read"].startswith("blocked"), result  # the browser keeps alice's answers from bob's page
    assert not result["kernel"].startswith("201"), result
    assert cluster.request("GET", "/user/alice/api/kernels")[1] == kernels_before  # nothing started in her session

    # the control: the same script from a page of alice's own origin (what every page was before subdomains) reads her files
    page.goto(url_for("/user/alice/static/favicon.ico"))
    control = page.evaluate(ATTACK, url_for("/user/alice/"))
    assert control["read"].startswith("200") and '"content": [' in control["read"], control
    assert control["kernel"].startswith("201"), control
    context.close()

"""A cookie tossed from a user's origin cannot log another person's browser in as that user.

The attack (login CSRF / session fixation): bob logs in, takes his own
hub-login cookie, and serves a page on his session's origin whose script sets
that cookie for the hub (on a real multi-label domain, `Domain=` the parent
domain reaches the hub's host).  alice's browser opens bob's page, then the
hub: before the fix the hub read the tossed cookie and showed alice's browser
bob's home, so what she did next (uploads, notebooks) went to bob.  The
`__Host-` prefix (c.JupyterHub.cookie_host_prefix_enabled) makes the hub read
only cookies a browser accepts from the hub's own host.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from tests.support.cluster import HUB, url_for
from tests.support.demo import password_of
from tests.support.hub import FormBrowser, _NoRedirect

LOGIN_COOKIE = "jupyterhub-hub-login"

TOSS = """(value) => {
  // every way a script of bob's origin may try to hand the hub his login
  document.cookie = `__Host-jupyterhub-hub-login=${value}; Path=/; Secure; SameSite=Lax`;
  document.cookie = `jupyterhub-hub-login=${value}; Domain=localhost; Path=/hub/; Secure; SameSite=Lax`;
  document.cookie = `jupyterhub-hub-login=${value}; Path=/hub/; Secure; SameSite=Lax`;
}"""


def hub_home_with(cookie: str) -> tuple[int, str]:
    """GET /hub/home sending only `cookie`: (status, redirect location or page)."""
    request = urllib.request.Request(f"{HUB}/hub/home", headers={"Cookie": cookie})
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Location", "")


def test_a_cookie_tossed_from_bobs_origin_does_not_make_alices_browser_bobs(browser, cluster):
    cluster.start("bob", {"gpus": 0, "hours": 1})
    cluster.wait_ready("bob")
    bobs = FormBrowser(HUB)  # bob logs in (without running his JupyterLab's pages) and takes his cookie
    assert bobs.login("bob", password_of("bob"))[0] == 302
    jar = next(h.cookiejar for h in bobs.opener.handlers if isinstance(h, urllib.request.HTTPCookieProcessor))
    [login] = [{"name": c.name, "value": c.value} for c in jar if c.name.endswith(LOGIN_COOKIE)]
    assert login["name"] == f"__Host-{LOGIN_COOKIE}"  # the prefix is on (before the fix: the bare name)

    alices = browser.new_context()
    page = alices.new_page()
    page.goto(url_for("/user/bob/static/favicon.ico"))  # any page of bob's origin; its script is bob's
    page.evaluate(TOSS, login["value"])
    assert login["value"] not in {
        c["value"] for c in alices.cookies(f"{HUB}/hub/")
    }  # the browser kept it on bob's host
    page.goto(f"{HUB}/hub/home")
    page.wait_for_url("**/hub/login**")  # alice's browser is nobody's, not bob's
    alices.close()

    # On a multi-label domain the browser does accept the parent-domain toss; the hub must not take it.
    assert hub_home_with(f"{LOGIN_COOKIE}={login['value']}")[0] == 302  # to the login page
    status, page_text = hub_home_with(f"__Host-{LOGIN_COOKIE}={login['value']}")
    assert status == 200 and "bob" in page_text  # the control: the value is bob's valid login

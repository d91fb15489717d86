"""LDAP login through the real hub's login page: messages in plain words, a hung directory blocks nothing."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.support.demo import password_of
from tests.support.http import raw_request, wait_until
from tests.support.hub import HubProcess, form_login
from tests.support.mockslurm import MockSlurm, config_data
from tests.support.slapd import ldap_settings


@pytest.fixture(scope="module")
def an_ldap_hub(tmp_path_factory, a_slapd):
    """A real hub with the portal's LDAP authenticator; the first URI is a hung server (set per test)."""
    root = tmp_path_factory.mktemp("ldaphub")
    portal = config_data(MockSlurm(root / "mockslurm"))
    portal["ldap"] = ldap_settings(a_slapd, max_failures=3, backoff=60)
    portal["hub"] = {"admin_groups": ["hpcadmin"]}
    hub = HubProcess(root, portal, ldap=True)
    hub.start()
    yield hub
    hub.stop()


def test_the_hub_log_states_who_may_log_in_not_that_nobody_can(an_ldap_hub):
    log = an_ldap_hub.log.read_text(errors="replace")
    assert "No allow config found" not in log
    groups = ", ".join(yaml.safe_load(an_ldap_hub.portal_yaml.read_text())["ldap"].get("allowed_groups") or [])
    expected = (
        f"Who may log in: members of the directory groups {groups} (ldap.allowed_groups)"
        if groups
        else "Who may log in: every account the directory accepts (ldap.allowed_groups is empty)"
    )
    assert expected in log


def test_login_page_asks_for_the_cluster_credentials(an_ldap_hub):
    page = urllib.request.urlopen(f"{an_ldap_hub.url}/hub/login", timeout=30).read().decode()
    assert "Log in with your cluster username and password." in page
    assert 'name="username"' in page and 'name="password"' in page


def test_good_login_redirects_and_bad_one_says_so_plainly(an_ldap_hub):
    status, page, location = form_login(an_ldap_hub.url, " Carol ", password_of("carol"))
    assert status == 302 and location.startswith("/hub/")
    status, user = an_ldap_hub.api("GET", "/users/carol")
    assert user["admin"] is True  # hpcadmin is an admin group
    status, page, _ = form_login(an_ldap_hub.url, "alice", "not-her-password")
    assert status == 403 and "Invalid username or password" in page
    assert "Traceback" not in page
    status, page, _ = form_login(an_ldap_hub.url, "alice", "")
    assert "Enter your password." in page and "Traceback" not in page
    status, page, _ = form_login(an_ldap_hub.url, "*)(uid=*", "x")
    assert status == 403 and "Invalid username or password" in page


def test_throttled_login_says_when_to_retry(an_ldap_hub):
    for _ in range(3):
        form_login(an_ldap_hub.url, "bob", "wrong")
    status, page, _ = form_login(an_ldap_hub.url, "bob", password_of("bob"))
    assert status == 429 and "Too many failed logins; try again in " in page


def test_hung_directory_blocks_only_that_login(tmp_path, a_slapd, a_hung_server):
    root = tmp_path / "hunghub"
    portal = config_data(MockSlurm(root / "mockslurm"))
    portal["ldap"] = ldap_settings(a_slapd, uris=[a_hung_server.uri], connect_timeout=8, response_timeout=8)
    hub = HubProcess(root, portal, ldap=True)
    hub.start()
    try:
        result = {}

        def slow_login():
            started = time.monotonic()
            result["login"] = form_login(hub.url, "alice", password_of("alice"))
            result["seconds"] = time.monotonic() - started

        thread = threading.Thread(target=slow_login)
        thread.start()
        # the login is under way once the hub's LDAP worker has connected to the hung server
        wait_until(lambda: a_hung_server.accepted, 10, "the login reaching the directory")
        started = time.monotonic()
        status, _ = hub.api("GET", "/")
        answered_in = time.monotonic() - started
        thread.join(30)
        # a blocked hub would answer only with the login, 8 s on; a busy 2-core machine can take a second or two
        assert status == 200 and answered_in < 4, answered_in
        assert "login" in result, "the login never finished"
        status, page, _ = result["login"]
        assert status == 503 and "The directory service is not answering; try again in a minute." in page
        assert 7.5 < result["seconds"] < 20
    finally:
        hub.stop()


def raw_post(url: str, headers: dict[str, str], chunks: list[bytes] = ()) -> int | str:
    """POST over a bare socket (tests/support/http.py): the response's status, or "cut off"/"no answer"."""
    answer = raw_request("POST", url, headers, chunks, timeout=30)
    return answer[0] if isinstance(answer, tuple) else answer


def test_the_login_form_accepts_small_bodies_only(an_ldap_hub):
    # at the hub's own port (compute nodes reach it directly; through the proxy the cut-off upload is a 503)
    hub_login = an_ldap_hub.hub_api.removesuffix("/api") + "/login"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    # a declared length over the limit: refused before the body is sent (what curl does for a large body)
    assert raw_post(hub_login, {**form, "Content-Length": str(1024 * 1024), "Expect": "100-continue"}) == 413
    # an undeclared (chunked) body that grows past the limit: refused while it streams in, the rest dropped, never
    # read whole (read whole, it would reach the login form and get its 403 for the missing XSRF token)
    part = b"password=" + b"x" * 4096
    chunk = f"{len(part):x}\r\n".encode() + part + b"\r\n"
    assert raw_post(hub_login, {**form, "Transfer-Encoding": "chunked"}, [chunk] * 256 + [b"0\r\n\r\n"]) == 413
    status, _, location = form_login(an_ldap_hub.url, "carol", password_of("carol"))  # a real login still works
    assert status == 302 and location.startswith("/hub/")


def test_the_login_form_still_needs_its_xsrf_token(an_ldap_hub):
    request = urllib.request.Request(
        f"{an_ldap_hub.url}/hub/login",
        data=f"username=carol&password={password_of('carol')}".encode(),
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=30)
    assert info.value.code == 403 and "Login form invalid or expired" in info.value.read().decode()


def test_a_30_mb_login_form_through_the_proxy_gets_the_413_and_its_words(an_ldap_hub):
    # sent whole before the answer is read (urllib, requests): the hub answered at once and closed while the proxy
    # was still sending, and the proxy's reset became its 503 page (portal/refusedbody.py)
    form = b"username=carol&password=" + b"x" * (30 * 1024 * 1024)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": str(len(form))}
    answer = raw_request("POST", an_ldap_hub.url + "/hub/login", headers, [form], timeout=60)
    assert isinstance(answer, tuple) and answer[0] == 413, answer if isinstance(answer, str) else answer[:2]
    assert "The login form was too large." in answer[1]

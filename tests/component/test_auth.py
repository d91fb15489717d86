"""LDAP login against a real slapd: good and bad logins, injection, groups, failover, timeouts, throttling."""

from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace

import pytest
import yaml
from tornado import web

from portal.auth import DIRECTORY_DOWN, DIRECTORY_REFUSED, TOO_MANY, TOO_MANY_HERE, PortalLDAPAuthenticator
from portal.throttle import LoginThrottle
from tests.support.demo import password_of
from tests.support.http import wait_until
from tests.support.slapd import SUFFIX, ldap_settings


def make_authenticator(tmp_path, ldap: dict, hub: dict | None = None) -> PortalLDAPAuthenticator:
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump({"ldap": ldap, "hub": hub or {}}))
    return PortalLDAPAuthenticator(config_file=str(path))


def a_request(ip="192.0.2.10", headers: dict | None = None):
    """A login request as tornado hands it over: the peer's address, and remote_ip from the client's headers."""
    headers = headers or {}
    claimed = headers.get("X-Real-Ip") or headers.get("X-Forwarded-For", ip).split(",")[-1].strip()
    return SimpleNamespace(
        request=SimpleNamespace(
            remote_ip=claimed, headers=headers, connection=SimpleNamespace(context=SimpleNamespace(address=(ip, 40000)))
        )
    )


async def login(auth, username, password, ip="192.0.2.10", headers: dict | None = None):
    return await auth.authenticate(a_request(ip, headers), {"username": username, "password": password})


@pytest.fixture
def auth(tmp_path, a_slapd):
    return make_authenticator(tmp_path, ldap_settings(a_slapd), {"admin_groups": ["hpcadmin", "webadmins"]})


@pytest.fixture
def search_auth(tmp_path, a_slapd):
    return make_authenticator(
        tmp_path,
        ldap_settings(
            a_slapd,
            bind_dn_template="",
            service_dn=f"cn=portal,ou=services,{SUFFIX}",
            service_password_file=str(a_slapd.service_password_file),
            user_search_base=f"ou=people,{SUFFIX}",
        ),
        {"admin_groups": ["hpcadmin"]},
    )


async def test_good_login_carries_account_and_groups(auth):
    result = await login(auth, "alice", password_of("alice"))
    assert result == {
        "name": "alice",
        "admin": False,
        "auth_state": {
            "uid": "alice",
            "dn": f"uid=alice,ou=people,{SUFFIX}",
            "uidNumber": 5001,
            "gidNumber": 5000,
            "home": "/home/alice",
            "groups": ["datasci", "mlteam"],
            "mail": "alice@dsportal.test",
        },
    }


async def test_a_list_of_bind_templates_is_tried_in_order_until_one_binds(tmp_path, a_slapd):
    """As jupyterhub-ldapauthenticator takes bind_dn_template: people in more than one branch."""
    templates = [f"uid={{username}},ou=staff,{SUFFIX}", f"uid={{username}},ou=people,{SUFFIX}"]
    auth = make_authenticator(
        tmp_path,
        ldap_settings(
            a_slapd,
            bind_dn_template=templates,
            service_dn=f"cn=portal,ou=services,{SUFFIX}",
            service_password_file=str(a_slapd.service_password_file),
        ),
    )
    found = await login(auth, "alice", password_of("alice"))
    assert found["auth_state"]["dn"] == f"uid=alice,ou=people,{SUFFIX}"  # the second template's: no ou=staff
    assert await login(auth, "alice", "wrong-password") is None  # every template tried, none bound
    looked_up = await asyncio.to_thread(auth.directory.lookup, "alice")  # the refresh, with the service account
    assert looked_up is not None and looked_up.dn == f"uid=alice,ou=people,{SUFFIX}"
    # the refresh reads the entry the login bound as, not merely the first that exists (two people, one uid)
    again = await asyncio.to_thread(auth.directory.lookup, "alice", f"uid=alice,ou=people,{SUFFIX}")
    assert again is not None and again.dn == f"uid=alice,ou=people,{SUFFIX}"


def test_the_portals_login_refuses_to_run_with_the_login_turned_off(tmp_path):
    """ldap.enabled: false skips the section's checks (a template without {username} would log anyone in): a hub
    config that still names the portal's authenticator stops at its start, saying what to change."""
    with pytest.raises(ValueError, match=r"The portal's LDAP login is off \(ldap.enabled: false\)"):
        make_authenticator(tmp_path, {"enabled": False, "bind_dn_template": "cn=everyone,dc=x"})


async def test_search_then_bind_mode(search_auth):
    result = await login(search_auth, "carol", password_of("carol"))
    assert result["name"] == "carol" and result["admin"] is True
    assert result["auth_state"]["groups"] == ["datasci", "hpcadmin"]
    assert await login(search_auth, "carol", "wrong") is None
    assert await login(search_auth, "nobody", "x") is None


@pytest.mark.parametrize(
    "username, password", [("alice", "wrong"), ("nobody", password_of("alice")), ("alice", password_of("alice") + " ")]
)
async def test_wrong_password_and_unknown_user_look_the_same(auth, username, password):
    assert await login(auth, username, password) is None


async def test_empty_password_is_refused_before_ldap(auth, monkeypatch):
    monkeypatch.setattr(auth.directory, "authenticate", lambda *a: pytest.fail("LDAP was asked"))
    with pytest.raises(web.HTTPError) as info:
        await login(auth, "alice", "")
    assert info.value.status_code == 400 and info.value.jupyterhub_message == "Enter your password."


async def test_whitespace_and_upper_case_usernames_are_normalized(auth):
    assert (await login(auth, "  Alice ", password_of("alice")))["name"] == "alice"
    assert (await login(auth, "ALICE", password_of("alice")))["name"] == "alice"


INJECTIONS = [
    "*",
    "*)(uid=*",
    "admin)(|(uid=*",
    "alice)(|(uid=*",
    "uid=alice,ou=people",
    ',+"\\<>;=',
    "alice,ou=people",
    "alice\x00",
    "ali\nce",
    "alice*",
    "(uid=alice)",
    "a" * 1_000_000,
    "",
]


@pytest.mark.parametrize("username", INJECTIONS, ids=range(len(INJECTIONS)))
async def test_injection_usernames_are_refused_without_asking_ldap(auth, monkeypatch, caplog, username):
    monkeypatch.setattr(auth.directory, "authenticate", lambda *a: pytest.fail("LDAP was asked"))
    caplog.set_level(logging.DEBUG)
    assert await login(auth, username, password_of("alice")) is None
    assert all(len(r.getMessage()) < 300 for r in caplog.records)  # nothing logged at full length


@pytest.mark.parametrize("password", ["*", "*)(uid=*", password_of("alice") + ")(|(a=*", "\x00", "x" * 1_000_000])
async def test_injection_passwords_fail_cleanly(auth, caplog, password):
    caplog.set_level(logging.DEBUG)
    assert await login(auth, "alice", password) is None
    assert all(len(r.getMessage()) < 300 for r in caplog.records)


async def test_allowed_groups_both_styles(tmp_path, a_slapd):
    posix = make_authenticator(tmp_path, ldap_settings(a_slapd, allowed_groups=["hpcadmin"]))
    assert (await login(posix, "carol", password_of("carol")))["name"] == "carol"
    with pytest.raises(web.HTTPError) as info:
        await login(posix, "alice", password_of("alice"))
    assert info.value.status_code == 403 and "not allowed to use this portal" in info.value.jupyterhub_message
    names = make_authenticator(tmp_path, ldap_settings(a_slapd, allowed_groups=["mlteam"]))
    assert (await login(names, "alice", password_of("alice")))["name"] == "alice"
    with pytest.raises(web.HTTPError):
        await login(names, "bob", password_of("bob"))


async def test_admin_groups_both_styles(auth):
    assert (await login(auth, "carol", password_of("carol")))["admin"] is True  # posixGroup hpcadmin
    assert (await login(auth, "bob", password_of("bob")))["admin"] is True  # groupOfNames webadmins
    assert (await login(auth, "alice", password_of("alice")))["admin"] is False


async def test_failover_to_the_second_uri(tmp_path, a_slapd, a_refusing_uri):
    auth = make_authenticator(tmp_path, ldap_settings(a_slapd, uris=[a_refusing_uri, a_slapd.uri]))
    assert (await login(auth, "alice", password_of("alice")))["name"] == "alice"


async def test_directory_down_is_a_clear_message_at_once(tmp_path, a_refusing_uri):
    auth = make_authenticator(tmp_path, {"uris": [a_refusing_uri], "bind_dn_template": "uid={username},dc=x"})
    started = time.monotonic()
    with pytest.raises(web.HTTPError) as info:
        await login(auth, "alice", password_of("alice"))
    assert (info.value.status_code, info.value.jupyterhub_message) == (503, DIRECTORY_DOWN)
    assert time.monotonic() - started < 2  # refused connections do not wait for a timeout


async def test_hung_directory_times_out_and_the_event_loop_keeps_running(tmp_path, a_hung_server):
    auth = make_authenticator(
        tmp_path,
        {
            "uris": [a_hung_server.uri],
            "bind_dn_template": "uid={username},dc=x",
            "connect_timeout": 1,
            "response_timeout": 1,
        },
    )
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticking = asyncio.ensure_future(ticker())
    started = time.monotonic()
    with pytest.raises(web.HTTPError) as info:
        await login(auth, "alice", password_of("alice"))
    elapsed = time.monotonic() - started
    ticking.cancel()
    assert info.value.jupyterhub_message == DIRECTORY_DOWN
    assert 0.9 < elapsed < 5
    assert ticks >= elapsed / 0.05 * 0.5  # the loop kept running while LDAP waited


async def test_throttling_and_its_backoff(tmp_path, a_slapd):
    auth = make_authenticator(
        tmp_path, ldap_settings(a_slapd, max_failures=3, max_address_failures=4, failure_window=60, backoff=2)
    )
    for _ in range(3):
        assert await login(auth, "alice", "wrong") is None
    with pytest.raises(web.HTTPError) as info:
        await login(auth, "alice", password_of("alice"))  # a correct password does not bypass the back-off
    assert info.value.status_code == 429
    assert info.value.jupyterhub_message.startswith("Too many failed logins; try again in ")
    # bob from the same address is let in at once; once the address itself has failed 4 times, its logins
    # are slowed, never refused (many users may share an address)
    assert auth.slowdown("bob", "192.0.2.10") == 0
    assert (await login(auth, "bob", password_of("bob")))["name"] == "bob"
    assert await login(auth, "carol", "wrong") is None
    assert auth.slowdown("dave", "192.0.2.10") == 0.5 and auth.slowdown("dave", "192.0.2.99") == 0
    assert auth.slowdown("bob", "192.0.2.10") == 0  # bob logged in well from there: not slowed for its failures
    assert (await login(auth, "bob", password_of("bob")))["name"] == "bob"
    assert auth.slowdown("dave", "192.0.2.10") == 0.5  # 4 failures, 2 good logins
    for _ in range(2):  # once good logins from it are as many as its failures, it is a busy address, not a guesser
        assert (await login(auth, "bob", password_of("bob")))["name"] == "bob"
    assert auth.slowdown("dave", "192.0.2.10") == 0
    wait_until(
        lambda: auth.pair_throttle.wait_seconds(["alice|192.0.2.10"]) == 0, 10, "the back-off ending", every=0.05
    )
    assert (await login(auth, "alice", password_of("alice")))["name"] == "alice"


def test_throttle_window_and_success():
    now = [0.0]
    throttle = LoginThrottle(max_failures=3, window=10, backoff=30, clock=lambda: now[0])
    throttle.attempt(["u"])
    now[0] = 5
    throttle.attempt(["u"])
    now[0] = 12  # the first attempt left the window: two count
    throttle.attempt(["u"])
    assert (throttle.wait_seconds(["u"]), throttle.failures("u")) == (0, 2)
    throttle.attempt(["u"])
    assert throttle.wait_seconds(["u"]) == 30  # from the latest attempt
    now[0] = 42
    assert throttle.wait_seconds(["u"]) == 0
    throttle.attempt(["v"])
    throttle.attempt(["v"])
    throttle.success(["v"])
    throttle.attempt(["v"])
    assert (throttle.wait_seconds(["v"]), throttle.failures("v")) == (0, 1)
    throttle.attempt(["w"])
    throttle.attempt(["w"])
    throttle.forgive(["w"])
    assert throttle.failures("w") == 1  # only the latest attempt is taken back


def test_throttle_memory_is_bounded():
    throttle = LoginThrottle(max_failures=5, window=60, backoff=60, max_keys=100)
    for i in range(1000):
        throttle.attempt([f"addr:{i}"])
    assert len(throttle._attempts) == 100


def test_ldap_settings_are_checked(tmp_path):
    from portal.config import ConfigError

    with pytest.raises(ConfigError, match=r"ldap.connect_timeout: -1"):
        make_authenticator(
            tmp_path, {"uris": ["ldap://x"], "bind_dn_template": "uid={username}", "connect_timeout": -1}
        )


async def test_a_burst_of_wrong_passwords_reaches_the_directory_only_max_failures_times(auth, monkeypatch):
    asked = []
    real = auth.directory.authenticate

    def counted(username, password):
        asked.append(username)
        return real(username, password)

    monkeypatch.setattr(auth.directory, "authenticate", counted)
    results = await asyncio.gather(*(login(auth, "alice", f"guess-{i}") for i in range(200)), return_exceptions=True)
    assert len(asked) == auth.settings.ldap.max_failures == 5
    refused = [r for r in results if isinstance(r, web.HTTPError)]
    assert len(refused) == 195 and {r.status_code for r in refused} == {429}


async def test_guessing_from_one_address_does_not_lock_the_user_out_elsewhere(tmp_path, a_slapd):
    auth = make_authenticator(tmp_path, ldap_settings(a_slapd, max_failures=3, slowdown=0.5, backoff=60))
    for _ in range(3):
        assert await login(auth, "bob", "wrong", ip="203.0.113.66") is None
    with pytest.raises(web.HTTPError) as info:
        await login(auth, "bob", password_of("bob"), ip="203.0.113.66")  # that address is blocked for bob
    assert info.value.status_code == 429
    assert auth.slowdown("bob") == 0.5  # bob's own login is slowed, not blocked
    assert (await login(auth, "bob", password_of("bob"), ip="192.0.2.10"))["name"] == "bob"
    assert auth.slowdown("bob") == 0  # and his success ends the slowdown


@pytest.mark.parametrize("headers", [{"X-Real-Ip": "198.51.100.{i}"}, {"X-Forwarded-For": "198.51.100.{i}"}])
async def test_a_client_cannot_choose_its_address_for_the_throttle(tmp_path, a_slapd, headers):
    auth = make_authenticator(tmp_path, ldap_settings(a_slapd, max_failures=100, max_address_failures=4))
    for i in range(4):  # each claims another address; the hub sees one peer
        claimed = {k: v.format(i=i) for k, v in headers.items()}
        assert await login(auth, f"user{i}", "wrong", ip="192.0.2.10", headers=claimed) is None
    # all four counted against the one peer: its next login is slowed, whatever address it claims
    assert auth.address_throttle.failures("192.0.2.10") == 4 and auth.slowdown("alice", "192.0.2.10") == 0.5
    assert (
        await login(
            auth, "alice", password_of("alice"), ip="192.0.2.10", headers={k: v.format(i=9) for k, v in headers.items()}
        )
    )["name"] == "alice"


def test_the_client_address_is_believed_from_the_proxy_only():
    from portal.clientaddress import client_address

    proxies = ["127.0.0.1", "::1"]
    assert client_address("127.0.0.1", "203.0.113.9, 198.51.100.7", proxies) == "198.51.100.7"  # what the proxy saw
    assert client_address("192.0.2.10", "198.51.100.7", proxies) == "192.0.2.10"  # a direct client names itself
    assert client_address("127.0.0.1", "not-an-address", proxies) == "127.0.0.1"
    assert client_address("127.0.0.1", None, proxies) == "127.0.0.1"


def test_behind_a_tls_proxy_the_address_it_saw_is_believed():
    """hub.behind_tls_proxy: nginx on the hub's host sets X-Forwarded-For to its client, the proxy appends nginx's
    address (one of the proxies): the entry before it is the browser's (tests/component/test_front_proxy_addresses.py
    runs it through a real nginx)."""
    from portal.clientaddress import client_address

    proxies = ["127.0.0.1", "::1"]
    assert client_address("127.0.0.1", "198.51.100.7, 127.0.0.1", proxies, front=True) == "198.51.100.7"
    assert client_address("127.0.0.1", "198.51.100.7, 127.0.0.1", proxies) == "127.0.0.1"  # no TLS proxy: its own
    # a browser that reaches the proxy past nginx (not from one of the proxies) is itself, whatever it wrote
    assert client_address("127.0.0.1", "203.0.113.9, 192.0.2.10", proxies, front=True) == "192.0.2.10"
    assert client_address("127.0.0.1", "127.0.0.1", proxies, front=True) == "127.0.0.1"  # nothing before it
    assert client_address("127.0.0.1", "bogus, 127.0.0.1", proxies, front=True) == "127.0.0.1"
    # a dual-stack proxy's peer (::ffff:127.0.0.1) is the same trusted proxy
    assert client_address("::ffff:127.0.0.1", "198.51.100.7, ::ffff:127.0.0.1", proxies, front=True) == "198.51.100.7"


def test_an_ipv6_client_is_one_client_for_its_whole_64():
    """A new source address for every login, from one /64, would otherwise be a new client to the throttles."""
    from portal.clientaddress import bucket

    assert bucket("2001:db8:1:2:aaaa::1") == bucket("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert bucket("2001:db8:1:3::1") != bucket("2001:db8:1:2::1")
    assert bucket("198.51.100.7") == "198.51.100.7" and bucket("0.0.0.0") == "0.0.0.0"


def test_a_proxy_on_the_hubs_host_is_believed_at_the_hubs_own_internal_address():
    """A hub on the cluster network (hub.internal_connect_url http://10.1.0.5:8081, as the install guide asks) is
    reached there by its proxy, whose connections then come from 10.1.0.5: without it every browser was one client
    to the login throttle (found on the dev cluster's separate hosts: bob's flood slowed alice's login)."""
    from portal.clientaddress import client_address, with_hub_address

    def here(address):  # this host's addresses, as is_local finds them
        return address in ("10.1.0.5", "fd00::5")

    urls = ("http://0.0.0.0:8081", "http://10.1.0.5:8081")
    proxies = with_hub_address(("127.0.0.1", "::1"), urls, here)
    assert proxies == ("127.0.0.1", "::1", "10.1.0.5")
    assert client_address("10.1.0.5", "203.0.113.9", proxies) == "203.0.113.9"  # the proxy's word
    assert client_address("10.1.0.11", "203.0.113.9", proxies) == "10.1.0.11"  # a node's process: itself
    # a wildcard adds nothing; nor another host's address (a forwarder the nodes reach the hub through must be
    # listed, not believed by itself)
    assert with_hub_address(("127.0.0.1",), ("http://[::]:8081",), here) == ("127.0.0.1",)
    assert with_hub_address(("127.0.0.1",), ("http://0.0.0.0:8081", "http://10.9.9.9:8081"), here) == ("127.0.0.1",)
    # a host name (the default connect URL is this host's name): its addresses that are this host's own; the
    # hostile review found every browser one client where the proxy reached the hub by this host's name
    names = {"head.cluster": ["10.1.0.5", "10.9.9.9"], "elsewhere": ["10.9.9.9"]}
    urls = ("http://[::]:8081", "http://head.cluster:8081", "http://elsewhere:8081", "http://nowhere:8081")
    assert with_hub_address(("127.0.0.1",), urls, here, lambda host: names.get(host, [])) == ("127.0.0.1", "10.1.0.5")
    # an IPv6 address in the form a socket's peer takes
    assert with_hub_address((), ("http://[FD00:0::5]:8081",), here) == ("fd00::5",)


async def test_logins_through_a_proxy_at_the_hubs_own_address_are_throttled_per_browser(tmp_path, a_slapd):
    from portal.clientaddress import is_local

    assert is_local("127.0.0.1") and not is_local("192.0.2.77")  # a socket binds to this host's own only
    auth = make_authenticator(
        tmp_path,
        ldap_settings(a_slapd, max_failures=100, max_address_failures=4),
        {"internal_bind_url": "http://127.0.0.2:8081", "proxy_addresses": []},  # 127.0.0.2: this host's, on lo
    )
    for i in range(4):  # four browsers, each one wrong password, through the proxy at the hub's own address
        assert (
            await login(auth, f"user{i}", "wrong", ip="127.0.0.2", headers={"X-Forwarded-For": f"198.51.100.{i}"})
            is None
        )
    assert [auth.address_throttle.failures(f"198.51.100.{i}") for i in range(4)] == [1, 1, 1, 1]
    assert auth.address_throttle.failures("127.0.0.2") == 0  # not one bucket for all
    # a process elsewhere on the cluster network that claims an address is counted as itself
    for i in range(4):
        assert (
            await login(auth, f"user{i}", "wrong", ip="10.1.0.11", headers={"X-Forwarded-For": "198.51.100.9"}) is None
        )
    assert auth.address_throttle.failures("10.1.0.11") == 4 and auth.address_throttle.failures("198.51.100.9") == 0


async def test_when_too_many_logins_wait_for_the_directory_more_are_told_so(tmp_path, a_hung_server):
    auth = make_authenticator(
        tmp_path,
        {
            "uris": [a_hung_server.uri],
            "bind_dn_template": "uid={username},dc=x",
            "connect_timeout": 2,
            "response_timeout": 2,
            "max_waiting": 2,
        },
    )
    results = await asyncio.gather(
        *(login(auth, name, "pw") for name in ("alice", "bob", "carol", "dave")), return_exceptions=True
    )
    messages = sorted(r.jupyterhub_message for r in results)
    assert messages == sorted([DIRECTORY_DOWN, DIRECTORY_DOWN, TOO_MANY, TOO_MANY])
    assert sorted(r.status_code for r in results) == [503] * 4


async def test_a_flood_of_bad_logins_never_turns_away_a_correct_password(tmp_path, a_slapd):
    """The attack: one address floods bad logins; each is slowed.  Before the fix the slowed logins held every
    max_waiting slot while they waited, and alice's correct password got 503 for as long as the flood lasted."""
    auth = make_authenticator(tmp_path, ldap_settings(a_slapd, max_waiting=4, max_address_failures=2, slowdown=3))
    flooder = "198.51.100.66"
    first = [await login(auth, f"nobody{i}", "wrong", ip=flooder) for i in range(2)]  # from here on: slowed
    flood = [asyncio.create_task(login(auth, f"nobody{i}", "wrong", ip=flooder)) for i in range(40)]
    deadline = time.monotonic() + 10
    while auth._slowed.get(flooder, 0) < 4:  # the flood is waiting out its slowdown
        assert time.monotonic() < deadline, "the flood never got slowed"
        await asyncio.sleep(0.01)
    started = time.monotonic()
    assert (await login(auth, "alice", password_of("alice"), ip="192.0.2.10"))["name"] == "alice"
    assert time.monotonic() - started < 2  # not slowed, not queued behind the flood
    results = await asyncio.gather(*flood, return_exceptions=True)
    assert first == [None, None]
    refused = [r for r in results if isinstance(r, web.HTTPError)]
    assert {(r.status_code, r.jupyterhub_message) for r in refused} == {(429, TOO_MANY_HERE)}
    assert len(refused) == 36 and results.count(None) == 4  # 4 waited their turn and failed; the rest at once


async def test_a_flood_from_behind_a_nat_does_not_turn_away_its_known_users(tmp_path, a_slapd):
    """The flood comes from the address alice shares (a campus NAT): her address is slowed and its slowed
    logins capped, but alice logged in from it before, so her login is neither slowed nor refused."""
    auth = make_authenticator(tmp_path, ldap_settings(a_slapd, max_waiting=4, max_address_failures=2, slowdown=3))
    nat = "198.51.100.7"
    assert (await login(auth, "alice", password_of("alice"), ip=nat))["name"] == "alice"  # earlier that day
    for i in range(3):
        await login(auth, f"nobody{i}", "wrong", ip=nat)
    flood = [asyncio.create_task(login(auth, f"nobody{i}", "wrong", ip=nat)) for i in range(20)]
    deadline = time.monotonic() + 10
    while auth._slowed.get(nat, 0) < 4:
        assert time.monotonic() < deadline, "the flood never got slowed"
        await asyncio.sleep(0.01)
    assert auth.slowdown("bob", nat) > 0 and auth.slowdown("alice", nat) == 0
    started = time.monotonic()
    assert (await login(auth, "alice", password_of("alice"), ip=nat))["name"] == "alice"
    assert time.monotonic() - started < 2
    results = await asyncio.gather(*flood, return_exceptions=True)
    assert {r.status_code for r in results if isinstance(r, web.HTTPError)} == {429}


async def test_a_refusal_is_not_an_outage_and_does_not_fail_over(tmp_path, a_slapd, a_hung_server):
    wrong = tmp_path / "service.pw"
    wrong.write_text("not-the-password")
    auth = make_authenticator(
        tmp_path,
        ldap_settings(
            a_slapd,
            uris=[a_slapd.uri, a_hung_server.uri],
            bind_dn_template="",
            service_dn=f"cn=portal,ou=services,{SUFFIX}",
            service_password_file=str(wrong),
            user_search_base=f"ou=people,{SUFFIX}",
            response_timeout=5,
        ),
    )
    started = time.monotonic()
    with pytest.raises(web.HTTPError) as info:
        await login(auth, "alice", password_of("alice"))
    assert (info.value.status_code, info.value.jupyterhub_message) == (500, DIRECTORY_REFUSED)
    assert a_hung_server.accepted == []  # the second server was never tried
    assert time.monotonic() - started < 5

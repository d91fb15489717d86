"""Passwords never cross a network in clear text without a loud warning; LDAP to a remote server is encrypted by default."""

from __future__ import annotations

import pytest

from portal.cleartext import cleartext_warnings
from portal.config import ConfigError, parse_config
from portal.ldapclient import transport

LDAP = {"bind_dn_template": "uid={username},dc=x"}


def warnings_for(hub: dict, ldap: dict | None = None) -> list[str]:
    return cleartext_warnings(parse_config({"hub": hub, "ldap": {**LDAP, **(ldap or {})}}))


def test_plain_http_on_a_network_is_loud():
    [warning] = warnings_for({"bind_url": "http://0.0.0.0:8000"})
    assert warning.startswith("hub.bind_url http://0.0.0.0:8000 serves the login page over plain HTTP on a network")


@pytest.mark.parametrize(
    "hub",
    [
        {"bind_url": "http://127.0.0.1:8000"},
        {
            "bind_url": "https://0.0.0.0:8000",
            "tls_cert": "/etc/dsportal/tls/portal.crt",
            "tls_key": "/etc/dsportal/tls/portal.key",
        },
        {"bind_url": "http://0.0.0.0:8000", "behind_tls_proxy": True},
    ],
)
def test_https_loopback_or_a_tls_proxy_is_quiet(hub):
    assert warnings_for(hub) == []


def test_plain_ldap_to_a_remote_server_is_loud():
    [warning] = warnings_for(
        {"bind_url": "http://127.0.0.1:8000"}, {"uris": ["ldap://ldap1.example.org"], "tls": "plain"}
    )
    assert warning.startswith("ldap.uris ldap://ldap1.example.org: tls: plain sends passwords to a remote directory")


@pytest.mark.parametrize(
    "setting, uri, mode",
    [
        ("auto", "ldap://ldap1.example.org", "starttls"),
        ("auto", "ldap://127.0.0.1:389", "plain"),
        ("auto", "ldap://localhost", "plain"),
        ("auto", "ldaps://ldap1.example.org", "ldaps"),
        ("plain", "ldap://ldap1.example.org", "plain"),
        ("starttls", "ldap://127.0.0.1", "starttls"),
    ],
)
def test_ldap_transport_defaults_to_starttls_for_remote_servers(setting, uri, mode):
    assert transport(setting, uri) == mode


def test_tls_settings_go_together():
    with pytest.raises(ConfigError) as info:
        parse_config({"ldap": LDAP, "hub": {"bind_url": "https://0.0.0.0:8000"}})
    assert info.value.errors == ['portal.yaml: hub.tls_cert: "" (an https:// bind_url needs tls_cert and tls_key)']
    with pytest.raises(ConfigError) as info:
        parse_config({"ldap": LDAP, "hub": {"tls_cert": "/etc/c.pem"}})
    assert info.value.errors == [
        'portal.yaml: hub.tls_key: "" (tls_cert and tls_key go together)',
        'portal.yaml: hub.bind_url: "http://0.0.0.0:8000" (with tls_cert the portal serves https://; write https://...)',
    ]

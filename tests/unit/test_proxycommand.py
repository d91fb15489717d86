"""The proxy's command line from the admin config (portal/proxycommand.py), and the shipped units the dev cluster
runs as written: by equality."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from deploy.dev import portal as devportal
from deploy.dev.common import ETC, VENV
from portal.admin.cli import main
from portal.config import load_config
from portal.proxycommand import proxy_argv, proxy_problems
from portal.settings import HubSettings
from tests.support.guide import unit_settings

ROOT = Path(__file__).resolve().parents[2]
CHP = "/usr/local/bin/configurable-http-proxy"


def service(name: str) -> dict[str, list[str]]:
    """A shipped unit's [Service] settings, each key's values in order (the install guide's test reads units so)."""
    return unit_settings((ROOT / "deploy" / "systemd" / name).read_text())


def test_the_dev_cluster_runs_the_shipped_units_commands():
    proxy, hub = service("dsportal-proxy.service"), service("dsportal-hub.service")
    assert [shlex.split(v) for v in proxy["ExecStart"]] == [devportal.PROXY_COMMAND]
    assert [shlex.split(v) for v in hub["ExecStart"]] == [
        [str(VENV / "bin" / "jupyterhub"), "-f", str(ETC / "jupyterhub_config.py")]
    ]
    # the same config for both, where the dev cluster keeps it
    assert proxy["Environment"] == hub["Environment"] == [f"DSPORTAL_CONFIG={ETC / 'portal.yaml'}"]
    assert proxy["User"] == hub["User"] == ["dsportal"]


def test_what_the_dev_clusters_proxy_shows_is_what_dsportal_proxy_makes_of_the_dev_config():
    hub = load_config(ROOT / "deploy" / "portal.dev.yaml").hub
    assert proxy_argv(hub, CHP) == devportal.proxy_argv(CHP)
    assert proxy_argv(hub, CHP) == [
        CHP,
        "--ip", "127.0.0.1", "--port", "8000",
        "--api-ip", "127.0.0.1", "--api-port", "8001",
        "--ssl-cert", "/etc/dsportal/tls/portal.crt", "--ssl-key", "/etc/dsportal/tls/portal.key",
        "--host-routing",
        "--default-target", "http://10.77.0.1:8081", "--error-target", "http://10.77.0.1:8081/hub/error",
    ]  # fmt: skip


def test_https_on_443_behind_a_name_and_plain_http_behind_a_tls_proxy():
    site = HubSettings(
        bind_url="https://portal.example.org",
        tls_cert="/etc/dsportal/tls/portal.crt",
        tls_key="/etc/dsportal/tls/portal.key",
        internal_bind_url="http://0.0.0.0:8081",
    )
    assert proxy_argv(site, CHP) == [
        CHP,
        "--ip", "portal.example.org", "--port", "443",
        "--api-ip", "127.0.0.1", "--api-port", "8001",
        "--ssl-cert", "/etc/dsportal/tls/portal.crt", "--ssl-key", "/etc/dsportal/tls/portal.key",
        "--default-target", "http://127.0.0.1:8081", "--error-target", "http://127.0.0.1:8081/hub/error",
    ]  # fmt: skip
    fronted = HubSettings(bind_url="http://127.0.0.1:8000", behind_tls_proxy=True)
    assert proxy_argv(fronted, CHP)[1:5] == ["--ip", "127.0.0.1", "--port", "8000"]
    assert "--ssl-cert" not in proxy_argv(fronted, CHP)
    assert proxy_argv(HubSettings(), CHP)[1:5] == ["--ip", "0.0.0.0", "--port", "8000"]  # IPv4's every address
    # the hub's own API on IPv6: its loopback there (tornado binds :: for IPv6 alone), a literal in brackets
    assert proxy_argv(HubSettings(internal_bind_url="http://[::]:8081"), CHP)[-3:] == [
        "http://[::1]:8081", "--error-target", "http://[::1]:8081/hub/error"]  # fmt: skip
    assert proxy_argv(HubSettings(internal_bind_url="http://[fd00::1]:8081"), CHP)[-3] == "http://[fd00::1]:8081"


def test_the_proxy_refuses_to_start_without_its_token_or_a_key_it_cannot_read():
    hub = HubSettings(bind_url="https://127.0.0.1:8000", tls_cert="/etc/c.pem", tls_key="/etc/k.pem")
    assert proxy_problems(hub, {"CONFIGPROXY_AUTH_TOKEN": "x"}, readable=lambda path, mode: True) == []
    problems = proxy_problems(hub, {}, readable=lambda path, mode: path != "/etc/k.pem")
    assert len(problems) == 2
    assert problems[0].startswith("CONFIGPROXY_AUTH_TOKEN is not set: ")
    assert problems[1] == (
        f"hub.tls_key /etc/k.pem is not readable by this account (uid {os.getuid()}): the proxy serves HTTPS with "
        "it as the hub's service account; make it readable by that account alone"
    )


def test_dsportal_proxy_says_what_is_wrong_and_starts_nothing(tmp_path, monkeypatch, capsys):
    config = tmp_path / "portal.yaml"
    key = tmp_path / "missing.key"
    ldap = "ldap:\n  uris: [ldaps://ldap.example.org]\n  bind_dn_template: uid={username},dc=example,dc=org\n"
    config.write_text(
        f"hub:\n  bind_url: https://127.0.0.1:8000\n  tls_cert: {tmp_path / 'c.pem'}\n  tls_key: {key}\n{ldap}"
    )
    monkeypatch.delenv("CONFIGPROXY_AUTH_TOKEN", raising=False)
    assert main(["proxy", str(config), "--chp", "/bin/false"]) == 1
    err = capsys.readouterr().err
    assert "CONFIGPROXY_AUTH_TOKEN is not set" in err and f"hub.tls_key {key} is not readable" in err
    assert main(["proxy", str(config), "--chp", "/bin/false", "--print"]) == 0
    assert '"--ssl-key", "' + str(key) + '"' in capsys.readouterr().out


@pytest.mark.parametrize("bind_url", ["https://127.0.0.1:8000", "https://portal.example.org"])
def test_check_config_refuses_an_https_address_without_a_certificate(tmp_path, bind_url, capsys):
    config = tmp_path / "portal.yaml"
    config.write_text(f"hub:\n  bind_url: {bind_url}\n")
    assert main(["check-config", str(config)]) == 1
    assert "an https:// bind_url needs tls_cert and tls_key" in capsys.readouterr().out


def test_a_mistake_outside_the_hub_section_does_not_keep_the_proxy_down(tmp_path, capsys):
    """The proxy routes every running session: a restart of it reads the hub section alone when the rest of the
    file is wrong (the hub's own restart, with check-config, names the mistake)."""
    config = tmp_path / "portal.yaml"
    config.write_text("hub:\n  bind_url: http://127.0.0.1:8000\nslurm:\n  max_hours: -3\n")
    assert main(["proxy", str(config), "--chp", CHP, "--print"]) == 0
    assert capsys.readouterr().out.startswith(f'["{CHP}", "--ip", "127.0.0.1", "--port", "8000"')
    config.write_text("hub:\n  bind_url: ftp://127.0.0.1\n")
    assert main(["proxy", str(config), "--chp", CHP, "--print"]) == 1
    assert "hub.bind_url" in capsys.readouterr().err

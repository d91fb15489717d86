"""The proxy's command line, made from the admin config (`dsportal proxy`).

With `hub.external_proxy` the proxy is a service of its own (deploy/systemd/dsportal-proxy.service), which
JupyterHub never starts, so JupyterHub's own proxy settings (its certificate, its address) never reach it.  The
unit and the dev cluster both run `dsportal proxy`, which builds configurable-http-proxy's arguments from the
same config as the hub's, so the proxy serves what the config says: HTTPS with `hub.tls_cert` at `hub.bind_url`,
its API at `hub.proxy_api_url`, one origin per user with `hub.subdomain_host`, and the hub as its default target.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import yaml

from .config import ConfigError, config_path, load_config, parse_config
from .huburl import connect_url
from .settings import HubSettings

TOKEN_VARIABLE = "CONFIGPROXY_AUTH_TOKEN"  # the proxy's API token, in both services' environments


def _host(url: str) -> str:
    """A URL's host as configurable-http-proxy's --ip takes it, as JupyterHub's own proxy start passes it: 0.0.0.0
    is IPv4's every address, :: IPv6's too (node's listen), a name the address it resolves to."""
    return urlsplit(url).hostname or ""


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def hub_target(hub: HubSettings) -> str:
    """The hub's own address as the proxy reaches it: where it listens, a wildcard read as this host's loopback
    (the proxy runs beside the hub), else the address given."""
    bound = urlsplit(hub.internal_bind_url)
    port = bound.port or 8081
    if bound.hostname in ("0.0.0.0", ""):
        return f"{bound.scheme}://127.0.0.1:{port}"
    if bound.hostname == "::":  # tornado binds IPv6 alone then: its loopback, not IPv4's
        return f"{bound.scheme}://[::1]:{port}"
    return connect_url(hub) if hub.internal_connect_url else f"{bound.scheme}://{_url_host(bound.hostname)}:{port}"


def proxy_argv(hub: HubSettings, chp: str) -> list[str]:
    """configurable-http-proxy's command line for this config (pure)."""
    target = hub_target(hub)
    argv = [chp, "--ip", _host(hub.bind_url), "--port", str(_port(hub.bind_url))]
    argv += ["--api-ip", _host(hub.proxy_api_url), "--api-port", str(_port(hub.proxy_api_url))]
    if hub.tls_cert:
        argv += ["--ssl-cert", hub.tls_cert, "--ssl-key", hub.tls_key]
    if hub.subdomain_host:
        argv += ["--host-routing"]
    return [*argv, "--default-target", target, "--error-target", f"{target}/hub/error"]


def proxy_problems(hub: HubSettings, environ: dict[str, str], readable=os.access) -> list[str]:
    """Why the proxy cannot serve this config as this account, each with what to do ([] if it can)."""
    problems = []
    if not environ.get(TOKEN_VARIABLE):
        problems.append(
            f"{TOKEN_VARIABLE} is not set: the proxy's API needs the token the hub has too "
            "(the unit's EnvironmentFile, /etc/dsportal/proxy.env)"
        )
    for name in ("tls_cert", "tls_key"):
        path = getattr(hub, name)
        if path and not readable(path, os.R_OK):
            problems.append(
                f"hub.{name} {path} is not readable by this account (uid {os.getuid()}): the proxy serves HTTPS "
                "with it as the hub's service account; make it readable by that account alone"
            )
    return problems


def proxy_settings(path) -> HubSettings:
    """The admin file's hub section for the proxy: the whole file when it is valid, else the hub section alone, so a
    mistake elsewhere (the next restart's check-config names it) does not keep the proxy, and every session's
    route, down.  ConfigError when the hub section itself is wrong, or the file unreadable."""
    try:
        return load_config(path).hub
    except ConfigError as whole:
        try:
            data = yaml.safe_load(config_path(path).read_text())
            hub = data.get("hub") if isinstance(data, dict) else None
            return parse_config({"hub": hub, "ldap": {"enabled": False}}, str(path)).hub
        except (OSError, yaml.YAMLError, ConfigError):
            raise whole from None

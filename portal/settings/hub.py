"""The admin YAML's section hub: the portal's addresses, TLS, admins, state and request limits."""

from __future__ import annotations

from pydantic import model_validator

from .kinds import (
    AbsPath,
    DbUrl,
    Flag,
    GroupName,
    HttpUrl,
    IpAddress,
    OptionalAbsPath,
    OptionalHttpUrl,
    Username,
    integer,
    number,
)
from .section import Section, key, rule_error


class HubSettings(Section):
    bind_url: HttpUrl = key("http://0.0.0.0:8000", "Public address of the portal (the proxy listens here).")
    tls_cert: OptionalAbsPath = key(
        "", "The portal's TLS certificate (PEM, with its chain); bind_url is then https://."
    )
    tls_key: OptionalAbsPath = key(
        "", "The certificate's private key (PEM, readable by the hub's service account only)."
    )
    subdomain_host: OptionalHttpUrl = key(
        "",
        "One origin per user: each user's server at https://USER.<this host>, so a page one user serves "
        "cannot script another's session. Needs DNS (a wildcard record) and a certificate for *.<host>; "
        "empty = all sessions under the hub's own origin, and then no apps and no sharing (apps.offered, "
        "sharing.enabled).",
        example="https://portal.example.org",
    )
    behind_tls_proxy: Flag = key(
        False,
        "A TLS proxy in front of the portal terminates HTTPS (then bind_url is that proxy's plain "
        "target, e.g. http://127.0.0.1:8000); silences the clear-text warning.",
    )
    internal_bind_url: HttpUrl = key(
        "http://0.0.0.0:8081",
        "Where the hub's own API listens: an address the compute nodes reach, not "
        "the public network (sessions report their port here).",
    )
    internal_connect_url: OptionalHttpUrl = key(
        "", "The hub API address as compute nodes reach it; empty = http://<this host's name>:<port>."
    )
    admin_users: list[Username] = key([], "Users who are portal admins.")
    admin_groups: list[GroupName] = key([], "Directory groups whose members are portal admins.")
    data_dir: AbsPath = key("/var/lib/dsportal", "Folder for the hub's state (cookie secret, database).")
    db_url: DbUrl = key("", "Hub database; empty = an SQLite file in data_dir.")
    external_proxy: Flag = key(
        False,
        "The proxy runs as its own service (deploy/systemd/dsportal-proxy.service), so a hub restart "
        "leaves sessions reachable; false = the hub starts it as its child. Either way the token is "
        "CONFIGPROXY_AUTH_TOKEN in the hub's environment.",
    )
    proxy_api_url: HttpUrl = key("http://127.0.0.1:8001", "The proxy's REST API (external_proxy: true).")
    proxy_addresses: list[IpAddress] = key(
        ["127.0.0.1", "::1"],
        "Addresses the proxy reaches the hub from: only from these is X-Forwarded-For "
        "believed (the login throttle's client address); anything else is the peer itself. "
        "An address of the hub's host in internal_bind_url or internal_connect_url (this host's name when empty; "
        "a name's addresses looked up once at the hub's start) counts too (a proxy on the hub's host reaches it "
        "there); a proxy elsewhere, or a forwarder the nodes reach the hub through, must be listed.",
    )
    token_max_days: number(0, 3650) = key(
        30, "Longest life of an API token a user creates, in days (tokens without an expiry get this one)."
    )
    api_max_body_bytes: integer(1024, 16 * 1024 * 1024) = key(
        65536,
        "Largest request body, in bytes, that the portal's own endpoints (/hub/api/dsportal/..., the session "
        "start and stop, shares, the usage pages) read; a larger one is refused with 413 before it is read. "
        "Their largest real body is a usage report of a 64-GPU node, about 11 KB.",
    )
    api_rate_per_minute: integer(1, 100_000) = key(
        300,
        "Requests a minute each user (or service, or client address when nobody is logged in) may send to the "
        "portal's own endpoints; more get 429 with the seconds to wait. The home page asks about 6 a minute, "
        "a session and its JupyterLab a few more.",
    )
    api_burst: integer(1, 100_000) = key(
        150,
        "Requests to the portal's own endpoints a user may send at once, above the steady rate "
        "(api_rate_per_minute), before they wait.",
    )
    max_body_bytes: integer(65536, 100 * 1024 * 1024) = key(
        1024 * 1024,
        "Largest request body, in bytes, the hub's server reads for any endpoint, JupyterHub's own included "
        "(tornado's default: 100 MB); over it the connection is closed without an answer. At least "
        "api_max_body_bytes.",
    )

    @model_validator(mode="after")
    def _rules(self) -> HubSettings:
        problems: list = []
        if bool(self.tls_cert) != bool(self.tls_key):
            problems.append((".tls_key" if self.tls_cert else ".tls_cert", "", "tls_cert and tls_key go together"))
        https = self.bind_url.startswith("https://")
        if self.tls_cert and not https:
            problems.append((".bind_url", self.bind_url, "with tls_cert the portal serves https://; write https://..."))
        if https and not self.tls_cert:
            problems.append((".tls_cert", "", "an https:// bind_url needs tls_cert and tls_key"))
        if self.max_body_bytes < self.api_max_body_bytes:
            problems.append(
                (".max_body_bytes", self.max_body_bytes, "must be at least api_max_body_bytes, which it caps")
            )
        if problems:
            raise rule_error(*problems)
        return self

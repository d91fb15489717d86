"""Where cluster passwords would cross a network in clear text (check-config and the hub's start say so)."""

from __future__ import annotations

from .ldapclient import is_loopback, plain_remote_uris
from .settings import PortalSettings


def cleartext_warnings(settings: PortalSettings) -> list[str]:
    """One sentence per place a password would travel unencrypted over a network."""
    hub, found = settings.hub, []
    if hub.bind_url.startswith("http://") and not hub.behind_tls_proxy and not is_loopback(hub.bind_url):
        found.append(
            f"hub.bind_url {hub.bind_url} serves the login page over plain HTTP on a network: cluster "
            "passwords would cross it in clear text. Set hub.tls_cert and hub.tls_key (and https://), or "
            "put a TLS proxy in front and set hub.behind_tls_proxy."
        )
    for uri in plain_remote_uris(settings.ldap):
        found.append(
            f"ldap.uris {uri}: tls: plain sends passwords to a remote directory in clear text; use "
            "tls: auto or starttls (with ldap.ca_file)."
        )
    return found

"""The hub's API address as compute nodes reach it (the hub's config and `dsportal doctor` both need it)."""

from __future__ import annotations

import socket
from urllib.parse import urlparse

from .settings import HubSettings


def connect_url(hub: HubSettings) -> str:
    """hub.internal_connect_url, else the bind address with this host's name for a wildcard."""
    return connect_url_of(hub.internal_bind_url, hub.internal_connect_url)


def connect_url_of(bind_url: str, connect: str = "") -> str:
    """`connect` (hub.internal_connect_url), else `bind_url` with this host's name for a wildcard (a lookup)."""
    if connect:
        return connect
    bound = urlparse(bind_url)
    host = bound.hostname if bound.hostname not in ("0.0.0.0", "::", "") else socket.getfqdn()
    return f"{bound.scheme}://{host}:{bound.port or 8081}"

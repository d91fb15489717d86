"""The hub's API address as compute nodes reach it (the hub's config and `dsportal doctor` both need it)."""

from __future__ import annotations

import socket
from urllib.parse import urlparse

from .settings import HubSettings


def connect_url(hub: HubSettings) -> str:
    """hub.internal_connect_url, else the bind address with this host's name for a wildcard."""
    if hub.internal_connect_url:
        return hub.internal_connect_url
    bound = urlparse(hub.internal_bind_url)
    host = bound.hostname if bound.hostname not in ("0.0.0.0", "::", "") else socket.getfqdn()
    return f"{bound.scheme}://{host}:{bound.port or 8081}"

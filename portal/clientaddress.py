"""The real address of a login's client, for the throttle (runs in the hub).

Tornado, with JupyterHub's xheaders=True, takes `request.remote_ip` from
X-Real-Ip or X-Forwarded-For whoever sent them: a client going through the
proxy sets X-Real-Ip itself, and one on a compute node can reach the hub's
port directly.  Only the proxy's own addresses are believed, and only for
the last X-Forwarded-For entry, the one the proxy appended.
"""

from __future__ import annotations

import ipaddress


def _valid(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


def client_address(peer: str, forwarded_for: str | None, proxies: list[str]) -> str:
    """The peer, unless the peer is the proxy; then the address the proxy saw."""
    if peer not in proxies or not forwarded_for:
        return peer
    last = forwarded_for.split(",")[-1].strip()
    return last if _valid(last) else peer


UNIX_PEER = "0.0.0.0"  # tornado's own remote_ip for a peer without an IP address (a Unix socket)


def peer_of(handler) -> str:
    """The address the hub's connection comes from (tornado's connection context keeps the socket's address,
    which xheaders do not change)."""
    context = handler.request.connection.context
    if not hasattr(context, "address"):  # not a connection of tornado's HTTP server: what the request says
        return str(handler.request.remote_ip)
    address = context.address
    if isinstance(address, tuple) and address:
        return str(address[0])
    return UNIX_PEER

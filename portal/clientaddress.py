"""The real address of a login's client, for the throttle (runs in the hub).

Tornado, with JupyterHub's xheaders=True, takes `request.remote_ip` from
X-Real-Ip or X-Forwarded-For whoever sent them: a client going through the
proxy sets X-Real-Ip itself, and one on a compute node can reach the hub's
port directly.  Only the proxy's own addresses are believed, and only for
the last X-Forwarded-For entry, the one the proxy appended.

The proxy reaches the hub at the hub's internal URL (JupyterHub routes to the
connect URL), so a proxy on the hub's host connects from that address: on a
site whose hub listens on the cluster network, not from 127.0.0.1.  Its
address there is believed too, where it is this host's own (`proxies_of`):
were it not, every browser would be one client to the login throttle and the
anonymous rate limit, and one user's flood would slow everyone's logins.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import urlparse

from .huburl import connect_url_of


def _valid(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


def is_local(address: str) -> bool:
    """An address of this host's own (a socket binds to it): what connects from it runs on this host."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True


def addresses_of(host: str) -> list[str]:
    """The addresses a host name resolves to (none when it does not)."""
    try:
        return [str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)]
    except (OSError, UnicodeError):
        return []


def with_hub_address(
    configured: tuple[str, ...],
    internal_urls: tuple[str, ...],
    local: Callable[[str], bool] = is_local,
    resolve: Callable[[str], list[str]] = addresses_of,
) -> tuple[str, ...]:
    """`configured` and each address the hub's internal URLs name that is this host's own (`local`), in the form
    a socket's peer takes: an IP address, or a host name's addresses (`proxies_of` keeps the answer: one lookup
    a process, which the hub's config asks first, at its start).  None for a wildcard; none of another host: a connect URL may name a forwarder that
    every node's connection comes through, and that one must be listed."""
    found = list(configured)
    for url in internal_urls:
        host = urlparse(url).hostname or ""
        if not host or (_valid(host) and ipaddress.ip_address(host).is_unspecified):
            continue
        for named in [host] if _valid(host) else resolve(host):
            address = plain(str(ipaddress.ip_address(named.split("%")[0])))
            if address not in found and local(address):
                found.append(address)
    return tuple(found)


def proxies_of(hub) -> tuple[str, ...]:
    """The addresses whose X-Forwarded-For the hub believes: hub.proxy_addresses and the hub's own address on its
    internal URLs (`hub`: the HubSettings): the connect URL the proxy reaches it at, this host's name when none is
    set (portal/huburl.py), as JupyterHub routes the proxy's default target.  Every lookup once a process, not in
    each request's turn: the hub's config asks first."""
    return _proxies(tuple(hub.proxy_addresses), hub.internal_bind_url, hub.internal_connect_url or "")


@lru_cache(maxsize=8)
def _proxies(configured: tuple[str, ...], bind_url: str, connect: str) -> tuple[str, ...]:
    return with_hub_address(configured, (bind_url, connect_url_of(bind_url, connect)))


def client_address(
    peer: str, forwarded_for: str | None, proxies: tuple[str, ...] | list[str], front: bool = False
) -> str:
    """The peer, unless the peer is the proxy; then the address the proxy saw.  `front` (hub.behind_tls_proxy):
    where the proxy saw one of `proxies` (the TLS proxy in front, on the hub's host), the address that one wrote
    before it: the TLS proxy sets the header to its client's address (deploy/nginx/dsportal.conf), and the proxy
    appends its own peer after it.  Otherwise every browser behind the TLS proxy would be one client."""
    peer, trusted = plain(peer), {plain(p) for p in proxies}
    if peer not in trusted or not forwarded_for:
        return peer
    entries = [plain(entry.strip()) for entry in forwarded_for.split(",")]
    if not _valid(entries[-1]):
        return peer
    if front and entries[-1] in trusted and len(entries) >= 2 and _valid(entries[-2]):
        return entries[-2]
    return entries[-1]


def plain(address: str) -> str:
    """An address in one form (pure): an IPv4-mapped IPv6 address (a dual-stack socket's peer, ::ffff:127.0.0.1) as
    its IPv4, every address as ipaddress writes it; anything else unchanged."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    return str(ip.ipv4_mapped) if ip.version == 6 and ip.ipv4_mapped else str(ip)


def bucket(address: str) -> str:
    """The throttles' key for a client's address (pure): an IPv6 client's /64, the network one host or one home
    gets (a new source address for every login would otherwise be a new client each time); an IPv4 address itself."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    return str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)


def address_of(handler, hub) -> str:
    """The client of a request to the hub (`hub`: the HubSettings) as the throttles and rate limits count it."""
    forwarded = handler.request.headers.get("X-Forwarded-For")
    return bucket(client_address(peer_of(handler), forwarded, proxies_of(hub), front=hub.behind_tls_proxy))


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

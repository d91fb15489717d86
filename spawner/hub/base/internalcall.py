"""The hub's own calls inside the cluster: to a session's server at its address, or to its own API (hub side).

JupyterHub's internal TLS (its `internal_ssl` settings), where the site turns it on, secures them as it secures
its own calls to the servers.  A call made for a user carries a token of theirs made for that one call (its
scopes, its note: what the portal's APIs then take it for), deleted when the call ends however it ends.
"""

from __future__ import annotations

import ssl

from jupyterhub import orm
from jupyterhub.utils import make_ssl_context
from tornado.httpclient import AsyncHTTPClient, HTTPRequest, HTTPResponse


def internal_ssl(settings: dict) -> ssl.SSLContext | None:
    """JupyterHub's internal TLS context from the hub's tornado `settings`; None where it is off."""
    return make_ssl_context(
        settings.get("internal_ssl_key"), settings.get("internal_ssl_cert"), cafile=settings.get("internal_ssl_ca")
    )


async def post_as(
    user,
    url: str,
    body: str | bytes,
    *,
    note: str,
    scopes: list[str],
    timeout: float,
    max_body: int,
    connect_timeout: float = 20,
) -> HTTPResponse:
    """POST `body` (JSON) to `url` with a token of `user`'s (JupyterHub's) made for this call alone; tornado's
    errors are the caller's to word."""
    token = ""
    client = AsyncHTTPClient(force_instance=True, max_body_size=max_body)
    try:
        token = user.new_api_token(note=note, scopes=scopes, expires_in=int(timeout) + 60)
        request = HTTPRequest(
            url,
            method="POST",
            body=body,
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
            request_timeout=timeout,
            connect_timeout=connect_timeout,
            follow_redirects=False,
        )
        context = internal_ssl(user.settings)
        if context is not None:
            request.ssl_options = context
        return await client.fetch(request)
    finally:
        client.close()
        row = orm.APIToken.find(user.db, token) if token else None
        if row is not None:
            user.db.delete(row)
            user.db.commit()

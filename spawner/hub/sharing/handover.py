"""A share that ends hands its session a new token (hub side): the guest's copy of the old one dies at once.

The session's token (spawner/hub/session/token.py) is readable by every guest
of a shared session.  A share that ends replaces it (`replace`): a new server
token for that session, the OAuth client's secret with it, every other server
token of the session deleted, all before the revoke's answer.  Then the hub
hands the new token to the session's server at the address it routes to
(`deliver`; the session side is spawner/jupyter/sharing/handover.py), which
takes it only after asking the hub (`TokenCheckHandler`, in handlers.py) that
it is this session's live token: the guest's copy was the old one, now dead.
A delivery that fails is tried again by `keep_delivering`; a hub that restarts
before one arrived replaces the token again (the new one lived in its memory
only).  Each offer carries proofs keyed by the tokens the session may hold
(spawner/contract.py), so that the session asks the hub nothing about a
stranger's offer.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging

from jupyterhub import orm
from jupyterhub.utils import hash_token, url_path_join
from sqlalchemy.orm import object_session
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ...contract import MAX_OFFER_PROOFS, TOKEN_OFFER_HEADER, TOKEN_PUSH_PATH, offer_proofs, token_digest
from ..base.internalcall import internal_ssl
from ..base.logname import log_name
from ..base.upstream_jupyterhub import default_server_scopes
from ..session.token import running, server_tokens, session_note

KEEP_SECONDS = 5.0  # how often undelivered tokens are delivered again
DELIVERY_TIMEOUT = 15.0  # seconds the session's server has to take a new token (it asks the hub first)
DELIVERY_TRIES = (0.0, 0.5, 1.0)  # pauses before each try while a revoke waits for its answer

log = logging.getLogger("JupyterHub").getChild("sessiontoken")


def keep_proof_key(spawner) -> None:
    """Before the session's token is replaced: the digest of the token being replaced joins the ones the session
    may hold, which key the proofs of the hub's offers (spawner/contract.py), until the session confirms it took
    one.  A token handed over unconfirmed (its answer lost, a hub restart) may be the session's: it stays a key."""
    record = spawner.record
    replaced = token_digest(spawner.api_token) if spawner.api_token else record.token_sha256
    if not record.token_undelivered:
        record.held_digests = [replaced] if replaced else []
        return
    took_last, *since = record.held_digests or [""]  # the one it took stays; the newest of those since
    since = [d for d in since if d != replaced][-(MAX_OFFER_PROOFS - 2) :] + [replaced]
    record.held_digests = [d for d in [took_last, *since] if d]


def took(spawner, token: str) -> None:
    """The session answered that it took `token`: the session's token unless a newer one was made meanwhile, which
    is then offered with a proof keyed by this one (the record is saved by the caller)."""
    record = spawner.record
    if spawner.api_token and hmac.compare_digest(spawner.api_token, token):
        record.token_undelivered, record.held_digests = False, []
    elif token_digest(token) in record.held_digests:
        record.held_digests = [token_digest(token)]
    # else a late answer about a token older than the one the session is known to hold: it says nothing new


def replace(spawner) -> str:
    """A new server token for `spawner`'s running session, the only one: the OAuth client's secret with it,
    every other server token of the session deleted, the record's digest and id; -> the new token, which the
    session does not have yet (`deliver`).  No await: the old token is dead when this returns."""
    db = object_session(spawner.orm_spawner)
    orm_user = spawner.user.orm_user
    note = session_note(spawner)
    old = server_tokens(db, orm_user.id, note)
    scopes = list(old[-1].scopes) if old else default_server_scopes(spawner.user.name, spawner.name)
    token = orm_user.new_api_token(note=note, scopes=scopes)  # committed
    client = db.query(orm.OAuthClient).filter_by(identifier=spawner.oauth_client_id).one_or_none()
    if client is not None:
        client.secret = hash_token(token)  # the session's OAuth logins use its token as the client's secret
    for row in old:
        db.delete(row)
    keep_proof_key(spawner)
    spawner.api_token = token  # the spawner's observer keeps the record's digest and id
    spawner.record.token_undelivered = True
    spawner.save_state()  # commits the deletions too
    log.info("%s's session token replaced (%d old one(s) deleted)", log_name(spawner), len(old))
    return token


def delivery_request(spawner, token: str) -> HTTPRequest:
    server = spawner.server
    return HTTPRequest(
        url_path_join(server.url, TOKEN_PUSH_PATH),
        method="POST",
        body=json.dumps({"token": token}),
        headers={
            "Content-Type": "application/json",
            TOKEN_OFFER_HEADER: offer_proofs(spawner.record.held_digests, token),
        },
        request_timeout=DELIVERY_TIMEOUT,
        connect_timeout=5,
        follow_redirects=False,
    )


async def deliver(spawner, token: str, pauses=DELIVERY_TRIES) -> bool:
    """Hand `token` to the session's server (its address, not the proxy's); whether it took it."""
    context = internal_ssl(spawner.user.settings)
    client = AsyncHTTPClient(force_instance=True, max_body_size=4096)
    problem = ""
    try:
        for pause in pauses:
            await asyncio.sleep(pause)
            if spawner.server is None or not (spawner.api_token and hmac.compare_digest(spawner.api_token, token)):
                return False  # stopped, or replaced again meanwhile: nothing to hand over
            request = delivery_request(spawner, token)
            if context is not None:
                request.ssl_options = context
            try:
                await client.fetch(request)
            except HTTPClientError as e:
                problem = f"HTTP {e.code}" + (f": {e.response.body[:200]!r}" if e.response is not None else "")
                continue
            except OSError as e:
                problem = str(e)
                continue
            took(spawner, token)
            spawner.save_state()
            log.info("%s's session took its new token", log_name(spawner))
            return not spawner.record.token_undelivered
    finally:
        client.close()
    log.warning("%s's session did not take its new token yet (%s); trying again", log_name(spawner), problem)
    return False


def replace_in_session(spawner) -> asyncio.Task | None:
    """A running session's token replaced now (the old one is dead when this returns) and handed to the session
    in a task, which a revoke's answer awaits; None for a session that is not running (its tokens end with it)."""
    if not (spawner.ready and running(spawner)):
        return None
    task = asyncio.ensure_future(deliver(spawner, replace(spawner)))
    spawner.token_delivery = task  # held by its session until done (the loop keeps only weak references)
    return task


def delivering(spawner) -> bool:
    """Whether a new token is on its way to the session now (replace_in_session's task, not yet done)."""
    task = getattr(spawner, "token_delivery", None)
    return task is not None and not task.done()


async def keep_delivering(spawners, interval: float = KEEP_SECONDS) -> None:
    """The hub's loop: every `interval` s, a new token that did not reach its session is delivered again (replaced
    again after a hub restart: this hub never held it)."""
    while True:
        waiting = [s for s in spawners() if s.record.token_undelivered and s.ready and not s.pending]
        for spawner in [s for s in waiting if not delivering(s)]:
            try:
                if spawner.api_token:
                    await deliver(spawner, spawner.api_token, pauses=(0.0,))
                elif (task := replace_in_session(spawner)) is not None:
                    await task
            except Exception:  # the loop must outlive one bad pass
                log.exception("Handing %s its new token failed", log_name(spawner))
        await asyncio.sleep(interval)

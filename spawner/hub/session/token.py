"""The session's API token: what may use it, when it ends, and its replacement when a share ends (hub side).

JupyterHub gives each server an API token at its start (note "Server at
/user/NAME/SERVER/", owner the user, `access:servers` on that server name),
hands it to the session (JUPYTERHUB_API_TOKEN) and makes it the server's OAuth
client secret.  The user's code in the session can read it, and so can every
guest while the session is shared.  So:

- It ends with its session.  JupyterHub deletes it at a stop only when it still
  holds the token itself; a hub that restarted keeps only the token's digest
  (spawner/hub/session/record.py), so `revoke` deletes every server token of the
  session by its note and owner at each stop (the spawner's post-stop hook),
  and `sweep` deletes, when the hub starts and every SWEEP_SECONDS, every
  server token that is not the current token of a session whose server
  exists: those an earlier hub left behind included.
- The portal's APIs take a server token only from a session that runs
  (`refuse_ended`, in lookup.own_spawner and the port and ended reports).
- Its shares end with it too (`end_shares`, from the spawner's clear_state).
- A share that ends replaces it (`replace`): a new server token for that
  session, the OAuth client's secret with it, every other server token of the
  session deleted, all before the revoke's answer; then the hub hands the new
  token to the session's server at the address it routes to (`deliver`,
  spawner/jupyter/session/token.py), which takes it only after asking the hub
  that it is this session's live token: the guest's copy was the old one, now
  dead.  A delivery that fails is tried again by `keep_tokens`; a hub that
  restarts before one arrived replaces the token again (the new one lived in
  its memory only).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time

from jupyterhub import orm
from jupyterhub.utils import hash_token, make_ssl_context, url_escape_path, url_path_join
from sqlalchemy.orm import object_session
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ...contract import MAX_OFFER_PROOFS, TOKEN_OFFER_HEADER, TOKEN_PUSH_PATH, offer_proofs, token_digest
from ..base.logname import log_name
from ..base.upstream_jupyterhub import default_server_scopes

NOTE_PREFIX = "Server at "  # JupyterHub's note on the token it makes for a server (jupyterhub/user.py spawn)
HUB_CLIENT = "jupyterhub"  # the OAuth client of tokens the hub makes itself (a browser's are the server's client's)
SWEEP_SECONDS = 600.0  # how often server tokens of no running session are looked for
KEEP_SECONDS = 5.0  # how often undelivered tokens are delivered again
DELIVERY_TIMEOUT = 15.0  # seconds the session's server has to take a new token (it asks the hub first)
DELIVERY_TRIES = (0.0, 0.5, 1.0)  # pauses before each try while a revoke waits for its answer
ENDED_WORDS = "This token belongs to a session that is no longer running (or whose share has ended): it is no use now."

log = logging.getLogger("JupyterHub").getChild("sessiontoken")


def server_note(user_base_url: str, server_name: str) -> str:
    """The note JupyterHub gives the server token of `server_name` of the user at `user_base_url` (pure)."""
    return NOTE_PREFIX + url_path_join(user_base_url, url_escape_path(server_name), "/")


def is_server_token(row) -> bool:
    """Whether an orm.APIToken is a token JupyterHub made for a server (not a user's own, nor a browser's)."""
    return row.user_id is not None and row.client_id == HUB_CLIENT and (row.note or "").startswith(NOTE_PREFIX)


def stale_tokens(tokens: list[tuple[int, int, str]], live: dict[tuple[int, str], int]) -> list[int]:
    """Server tokens to delete (pure).  `tokens`: (id, user id, note) of every server token; `live`: (user id,
    note) of each server that exists -> the id of its current token, 0 when unknown (a record saved before the
    hub kept it): then the newest of that server's tokens is kept, the one its latest start made."""
    newest: dict[tuple[int, str], int] = {}
    for token_id, user_id, note in tokens:
        key = (user_id, note)
        if key in live and not live[key]:
            newest[key] = max(newest.get(key, 0), token_id)
    return sorted(
        token_id
        for token_id, user_id, note in tokens
        if (user_id, note) not in live or token_id != (live[(user_id, note)] or newest[(user_id, note)])
    )


def session_note(spawner) -> str:
    return server_note(spawner.user.base_url, spawner.name)


def server_tokens(db, user_id: int, note: str) -> list:
    return (
        db.query(orm.APIToken)
        .filter_by(user_id=user_id, client_id=HUB_CLIENT, note=note)
        .order_by(orm.APIToken.id)
        .all()
    )


def token_id_of(db, token: str) -> int:
    row = orm.APIToken.find(db, token) if token else None
    return row.id if row is not None else 0


def revoke(spawner) -> int:
    """Delete every server token of `spawner`'s session (it has ended); how many."""
    db = object_session(spawner.orm_spawner) if spawner.orm_spawner is not None else None
    if db is None:
        return 0
    rows = server_tokens(db, spawner.user.orm_user.id, session_note(spawner))
    for row in rows:
        db.delete(row)
    db.commit()
    return len(rows)


def sweep(db, spawners) -> int:
    """Delete every server token that is not the current token of a session whose server exists (the hub's
    database, and `spawners`: the portal spawners this hub holds, whose record knows a token the database may
    not have saved yet); how many.  No await: nothing starts or ends a session meanwhile."""
    live: dict[tuple[int, str], int] = {}
    # whole rows: a column of JupyterHub's JSONDict type alone makes SQLAlchemy warn at every query
    servers = db.query(orm.Spawner, orm.Server.base_url).join(orm.Server, orm.Spawner.server_id == orm.Server.id)
    for orm_spawner, base_url in servers:
        token_id = (orm_spawner.state or {}).get("token_id", 0)
        live[(orm_spawner.user_id, NOTE_PREFIX + base_url)] = (
            token_id if isinstance(token_id, int) and not isinstance(token_id, bool) else 0
        )
    for spawner in spawners:
        key = (spawner.user.orm_user.id, session_note(spawner))
        if key in live and spawner.record.token_id:
            live[key] = spawner.record.token_id
    rows = db.query(orm.APIToken.id, orm.APIToken.user_id, orm.APIToken.note).filter(
        orm.APIToken.user_id.isnot(None),
        orm.APIToken.client_id == HUB_CLIENT,
        orm.APIToken.note.startswith(NOTE_PREFIX),
    )
    stale = stale_tokens([(i, u, n) for i, u, n in rows], live)
    if stale:
        db.query(orm.APIToken).filter(orm.APIToken.id.in_(stale)).delete(synchronize_session=False)
        db.commit()
    return len(stale)


def running(spawner) -> bool:
    """A session whose token may be used: starting or running, not stopping."""
    return (spawner.ready or spawner.pending == "spawn") and not spawner.record.stopping


def refuse_ended(handler, sessions) -> None:
    """HTTP 403 when the request's token is a server token but not the current one of a running session of
    `sessions` (the user's): an ended session's, a replaced one's, one an earlier hub left behind."""
    token = handler.get_auth_token()
    if not token or any(running(s) and s.holds_token(token) for s in sessions):
        return
    row = handler.get_token()  # asked only for tokens that are no running session's
    if row is not None and is_server_token(row):
        raise web.HTTPError(403, ENDED_WORDS)


def refuse_session_token(handler, sessions, words: str) -> None:
    """HTTP 403 with `words` when the request's token is a session's own (a server token): for what a guest of
    a shared session, whose code can read that token, must not reach with it (the user's receipts)."""
    token = handler.get_auth_token()
    if not token:
        return  # the user's cookie
    row = handler.get_token()
    if any(s.holds_token(token) for s in sessions) or (row is not None and is_server_token(row)):
        raise web.HTTPError(403, words)


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
    settings = spawner.user.settings
    context = make_ssl_context(
        settings.get("internal_ssl_key"), settings.get("internal_ssl_cert"), cafile=settings.get("internal_ssl_ca")
    )
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


async def keep_tokens(spawners, db, interval: float = KEEP_SECONDS, sweep_every: float = SWEEP_SECONDS) -> None:
    """The hub's loop: a sweep at the hub's start and every `sweep_every` s; every `interval` s, a new token
    that did not reach its session is delivered again (replaced again after a hub restart: this hub never
    held it)."""
    swept = -sweep_every
    while True:
        database = db()
        if database is not None:
            held = spawners()
            if time.monotonic() - swept >= sweep_every:
                try:
                    deleted = sweep(database, held)
                except Exception:  # the loop must outlive one bad pass
                    log.exception("Looking for server tokens of no running session failed")
                    database.rollback()
                else:
                    swept = time.monotonic()
                    if deleted:
                        log.warning("Deleted %d server token(s) of no running session", deleted)
            waiting = [s for s in held if s.record.token_undelivered and s.ready and not s.pending]
            for spawner in [s for s in waiting if not delivering(s)]:
                try:
                    if spawner.api_token:
                        await deliver(spawner, spawner.api_token, pauses=(0.0,))
                    elif (task := replace_in_session(spawner)) is not None:
                        await task
                except Exception:
                    log.exception("Handing %s its new token failed", log_name(spawner))
        await asyncio.sleep(interval)


def end_shares(db, orm_spawner) -> int:
    """End every share and share code of a session (it has ended); how many."""
    if orm_spawner is None or orm_spawner.id is None:
        return 0
    ended = db.query(orm.Share).filter_by(spawner_id=orm_spawner.id).delete()
    ended += db.query(orm.ShareCode).filter_by(spawner_id=orm_spawner.id).delete()
    db.commit()
    return ended

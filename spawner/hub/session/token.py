"""The session's API token: what may use it and when it ends (hub side).

JupyterHub gives each server an API token at its start (note "Server at
/user/NAME/SERVER/", owner the user, `access:servers` on that server name),
hands it to the session (JUPYTERHUB_API_TOKEN) and makes it the server's OAuth
client secret.  The user's code in the session can read it, and so can every
guest while the session is shared.  So:

- It ends with its session.  JupyterHub deletes it at a stop only when it still
  holds the token itself; a hub that restarted keeps only the token's digest
  (spawner/hub/session/record.py), so `revoke` deletes every server token of the
  session by its note and owner at each stop (the spawner's post-stop hook),
  and `sweep` deletes, when the hub starts and every SWEEP_SECONDS
  (`keep_swept`), every server token that is not the current token of a
  session whose server exists: those an earlier hub left behind included.
- The portal's APIs take a server token only from a session that runs
  (`refuse_ended`, in lookup.own_spawner and the port and ended reports).
- Its shares end with it too (`end_shares`, from the spawner's clear_state).
- A share that ends replaces it: spawner/hub/sharing/handover.py.
"""

from __future__ import annotations

import asyncio
import logging

from jupyterhub import orm
from jupyterhub.utils import url_escape_path, url_path_join
from sqlalchemy.orm import object_session
from tornado import web

NOTE_PREFIX = "Server at "  # JupyterHub's note on the token it makes for a server (jupyterhub/user.py spawn)
# the note of a token the hub makes for one call of its own to a session (a continuation's carry): like the
# session's own token, a guest's code in the session could catch it, so the portal's APIs take it for nothing
SESSION_CALL_NOTE = "dsportal call to the session of "
HUB_CLIENT = "jupyterhub"  # the OAuth client of tokens the hub makes itself (a browser's are the server's client's)
SWEEP_SECONDS = 600.0  # how often server tokens of no running session are looked for
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
    if any(s.holds_token(token) for s in sessions) or (row is not None and is_session_reachable(row)):
        raise web.HTTPError(403, words)


def is_session_reachable(row) -> bool:
    """A token the code in a session could read: the session's own, or one the hub made for a call to it."""
    return is_server_token(row) or (row.note or "").startswith(SESSION_CALL_NOTE)


async def keep_swept(spawners, db, every: float = SWEEP_SECONDS) -> None:
    """The hub's loop: a sweep at the hub's start and every `every` s."""
    while True:
        database = db()
        if database is not None:
            try:
                deleted = sweep(database, spawners())
            except Exception:  # the loop must outlive one bad pass
                log.exception("Looking for server tokens of no running session failed")
                database.rollback()
            else:
                if deleted:
                    log.warning("Deleted %d server token(s) of no running session", deleted)
                await asyncio.sleep(every)
                continue
        await asyncio.sleep(min(every, 5.0))  # no database yet, or a failed pass: soon again


def end_shares(db, orm_spawner) -> int:
    """End every share and share code of a session (it has ended); how many."""
    if orm_spawner is None or orm_spawner.id is None:
        return 0
    # "fetch": the rows deleted are looked up by the query, not by evaluating its criteria against every object in
    # the hub's one database session (SQLAlchemy's default, "evaluate"): with 20,000 users loaded that took ~20 ms
    # of the event loop per session start, and a wave of 100 starts waited 17 s (tests/perf/bench_scale.py)
    ended = db.query(orm.Share).filter_by(spawner_id=orm_spawner.id).delete(synchronize_session="fetch")
    ended += db.query(orm.ShareCode).filter_by(spawner_id=orm_spawner.id).delete(synchronize_session="fetch")
    db.commit()
    return ended

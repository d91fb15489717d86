"""Sessions continued automatically before their time limit, for users who chose it per session (hub side).

The user ticks "Continue automatically before the end" on a running session's card (the choice is kept on their
record, per session name, until they untick it).  The hub's loop (`keep_continuing`) looks every AUTO_EVERY
seconds: a session so chosen, running, with at most `lead_seconds` left (Slurm's last listing: no call of its
own), is continued once per job, as the user's own request would (`POST /hub/api/dsportal/continue`, `force`:
a cell still running at the end dies with the job anyway), with a token of the user's made for that one call
and deleted after: every check of the API, its rate limit included, applies.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime

from jupyterhub import orm
from jupyterhub.utils import make_ssl_context, url_path_join
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..base.logname import log_name
from ..clock.extension import seconds_left
from ..session.userrecord import user_record

log = logging.getLogger("JupyterHub").getChild("continuation")

AUTO_EVERY = 15.0  # seconds between the loop's looks
AUTO_NOTE = "dsportal automatic continuation of "
CALL_TIMEOUT = 960.0  # the continue API's own carry wait (900 s at most) and the stop's and start's


def lead_seconds(settings) -> int:
    """How long before the end a session is continued: before Slurm's warning saves the documents, with a
    kernel's time to write its variables (pure)."""
    return settings.sessions.save_minutes * 60 + settings.sessions.continuation.dump_seconds + 30


def due(spawner, tried: set[str], now: datetime) -> bool:
    """Whether `spawner`'s session is to be continued now (the module's words); `tried`: jobs already tried."""
    settings = spawner.settings
    if not settings.sessions.continuation.enabled or not user_record(spawner).auto_continue.get(spawner.name):
        return False
    if not (spawner.ready and spawner.job_id and spawner.record.start_done) or spawner.pending:
        return False
    if spawner.job_id in tried or getattr(spawner, "continuing", False):
        return False
    left = seconds_left(spawner.slurm_client.watcher.last_known(spawner.job_id), now)
    return left is not None and left <= lead_seconds(settings)


async def continue_automatically(spawner) -> None:
    """The continue API, asked for the user with a token made for this one call."""
    user, name = spawner.user, spawner.name
    token = user.new_api_token(
        note=AUTO_NOTE + log_name(spawner),
        scopes=[f"servers!server={user.name}/{name}", f"access:servers!server={user.name}/{name}"],
        expires_in=int(CALL_TIMEOUT) + 60,
    )
    settings = user.settings
    request = HTTPRequest(
        url_path_join(spawner.hub.api_url, "dsportal/continue"),
        method="POST",
        body=json.dumps({"server": name, "force": True}),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        request_timeout=CALL_TIMEOUT,
        follow_redirects=False,
    )
    context = make_ssl_context(
        settings.get("internal_ssl_key"), settings.get("internal_ssl_cert"), cafile=settings.get("internal_ssl_ca")
    )
    if context is not None:
        request.ssl_options = context
    client = AsyncHTTPClient(force_instance=True, max_body_size=256 * 1024)
    try:
        answer = await client.fetch(request)
        log.info("%s continued automatically: %s", log_name(spawner), json.loads(answer.body).get("words", ""))
    except HTTPClientError as e:
        words = e.response.body[:300] if e.response is not None else str(e)
        log.warning("%s was not continued automatically (HTTP %s): %s", log_name(spawner), e.code, words)
    except (OSError, ValueError) as e:
        log.warning("%s was not continued automatically: %s", log_name(spawner), e)
    finally:
        client.close()
        row = orm.APIToken.find(user.db, token)
        if row is not None:
            user.db.delete(row)
            user.db.commit()


async def keep_continuing(spawners, every: float = AUTO_EVERY) -> None:
    """The hub's loop (the module's words)."""
    tried: set[str] = set()  # once per job, whatever the answer
    running: set[asyncio.Task] = set()  # held until done: the loop keeps weak references only
    while True:
        now = datetime.now()
        for spawner in [s for s in spawners() if due(s, tried, now)]:
            tried.add(spawner.job_id)
            log.info("%s is near its end: continuing it automatically", log_name(spawner))
            task = asyncio.ensure_future(continue_automatically(spawner))
            running.add(task)
            task.add_done_callback(running.discard)
        await asyncio.sleep(every)

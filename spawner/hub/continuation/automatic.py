"""Sessions continued automatically before their time limit, for users who chose it per session (hub side).

The user ticks "Continue automatically before the end" on a running session's card (the choice is kept on their
record, per session name, until they untick it).  The hub's loop (`keep_continuing`) looks every AUTO_EVERY
seconds: a session so chosen, running, long enough (spawner/hub/clock/lead.py: never a short job, whose successor
would be due at once), with at most `lead_seconds` left (Slurm's last listing: no call of its own), is continued
once per job (a passing refusal, 429 or no answer, is tried again on the next look), as the user's own request would (`POST /hub/api/dsportal/continue`, `force`:
a cell still running at the end dies with the job anyway), with a token of the user's made for that one call
and deleted after: every check of the API, its rate limit included, applies.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime

from jupyterhub.utils import url_path_join
from tornado.httpclient import HTTPClientError

from ..base.internalcall import post_as
from ..base.logname import log_name
from ..clock.extension import seconds_left
from ..clock.lead import continues_automatically, lead_seconds
from ..session.userrecord import user_record

log = logging.getLogger("JupyterHub").getChild("continuation")

AUTO_EVERY = 15.0  # seconds between the loop's looks
AUTO_NOTE = "dsportal automatic continuation of "
CALL_TIMEOUT = 1200.0  # the continue API's own waits: the carry's (900 s at most), the stop's (120 s), the start's


def due(spawner, tried: set[str], now: datetime) -> bool:
    """Whether `spawner`'s session is to be continued now (the module's words); `tried`: jobs already tried."""
    if not (spawner.ready and spawner.job_id and spawner.record.start_done) or spawner.pending:
        return False
    if spawner.job_id in tried or getattr(spawner, "continuing", False):
        return False
    settings = spawner.settings
    if not continues_automatically(settings, spawner.record.minutes):  # a short job's successor would be due at once
        return False
    if not user_record(spawner).auto_continue.get(spawner.name):
        return False
    left = seconds_left(spawner.slurm_client.watcher.last_known(spawner.job_id), now)
    return left is not None and left <= lead_seconds(settings)


async def continue_automatically(spawner) -> bool:
    """The continue API, asked for the user with a token made for this one call; -> whether that was the job's
    one try (done, or refused for good), not a passing refusal to try again on the next look (429, no answer)."""
    user, name = spawner.user, spawner.name
    try:
        answer = await post_as(
            user,
            url_path_join(spawner.hub.api_url, "dsportal/continue"),
            json.dumps({"server": name, "force": True}),
            note=AUTO_NOTE + log_name(spawner),
            scopes=[f"servers!server={user.name}/{name}", f"access:servers!server={user.name}/{name}"],
            timeout=CALL_TIMEOUT,
            max_body=256 * 1024,
        )
        words = json.loads(answer.body).get("words", "") if answer.body.startswith(b"{") else ""
        log.info("%s continued automatically: %s", log_name(spawner), words)
        return True
    except HTTPClientError as e:
        said = e.response.body[:300] if e.response is not None else str(e)
        log.warning("%s was not continued automatically (HTTP %s): %s", log_name(spawner), e.code, said)
        return e.code not in (429, 599)
    except Exception:  # whatever it is, the loop goes on for everyone else; this job is tried no more
        log.exception("%s was not continued automatically", log_name(spawner))
        return True


async def keep_continuing(spawners, every: float = AUTO_EVERY) -> None:
    """The hub's loop (the module's words)."""
    tried: set[str] = set()  # once per job, whatever the answer
    running: set[asyncio.Task] = set()  # held until done: the loop keeps weak references only

    async def once(spawner, job_id: str) -> None:
        if not await continue_automatically(spawner):
            tried.discard(job_id)  # a passing refusal: the next look tries again while there is time

    while True:
        now = datetime.now()
        for spawner in [s for s in spawners() if due(s, tried, now)]:
            tried.add(spawner.job_id)
            log.info("%s is near its end: continuing it automatically", log_name(spawner))
            task = asyncio.ensure_future(once(spawner, spawner.job_id))
            running.add(task)
            task.add_done_callback(running.discard)
        await asyncio.sleep(every)

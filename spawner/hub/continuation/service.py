"""A running session continued in a new Slurm job of the same shape, its kernels' variables carried (hub side).

The steps, each bounded:
1. The session's server carries its notebooks' kernels out (spawner/jupyter/continuation/), asked at its own
   address with a token made for this one call (the owner's, for that server alone, deleted after): a hub that
   restarted holds no session token of its own.  A carry that fails stops nothing, and says why.
2. The old job is stopped as JupyterHub stops any server (the route first, then scancel): it ends now, whatever
   the carry left undone.
3. The same server starts again with the same options (partition, GPU type, GPUs, account, QOS, hours) and
   `continue_from: OLD_JOB`: its Jupyter server gives each notebook its variables back as JupyterLab opens it.
"""

from __future__ import annotations

import json
import logging

from jupyterhub import orm
from jupyterhub.utils import make_ssl_context, url_path_join
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ...contract import CONTINUATION_CARRY_PATH
from ..base.logname import log_name

log = logging.getLogger("JupyterHub").getChild("continuation")

MAX_ANSWER = 256 * 1024  # the server's summary of what it carried
TOKEN_SECONDS = 3600  # the carry's own token expires by then at the latest (deleted at once after the call)
MOST_KERNELS = 10  # the hub waits for this many kernels' dumps at most, then stops the job anyway


class ContinueRefused(Exception):
    """Why a session was not continued: an HTTP status and words."""

    def __init__(self, status: int, words: str):
        super().__init__(words)
        self.status = status


def successor_options(options: dict | None, old_job: str) -> dict:
    """The options of the session that continues `old_job`: the same, naming the job it continues (pure)."""
    kept = {k: v for k, v in (options or {}).items() if k != "continue_from"}
    return {**kept, "continue_from": old_job}


def carried_words(notebooks: dict) -> str:
    """'2 notebooks: 41 variables carried, 2 not' (pure)."""
    carried = sum(n.get("carried", 0) for n in notebooks.values())
    missed = sum(len(n.get("not", {})) for n in notebooks.values())
    refused = sum(1 for n in notebooks.values() if n.get("refused"))
    words = f"{len(notebooks)} notebook(s): {carried} variable(s) carried, {missed} not"
    return words + (f"; {refused} kernel(s) carried nothing" if refused else "")


def check_can_continue(spawner) -> None:
    """ContinueRefused unless the session runs, is not starting or stopping, and no continuation is under way."""
    if not spawner.settings.sessions.continuation.enabled:
        raise ContinueRefused(403, "The admin has not enabled continuing sessions here.")
    if getattr(spawner, "continuing", False):
        raise ContinueRefused(409, "This session is being continued already; wait for its new session.")
    if spawner.pending or not spawner.ready or not spawner.job_id:
        raise ContinueRefused(409, "Only a running session can be continued; start it, or wait for it to start.")


async def carry_out(spawner, timeout: float) -> dict:
    """Ask the session's server to carry its kernels out; -> {notebook path: summary}.  ContinueRefused (502)
    with the reason when it does not answer in time or refuses."""
    user = spawner.user
    token = user.new_api_token(
        note=f"dsportal continuation of {log_name(spawner)}",
        scopes=[f"access:servers!server={user.name}/{spawner.name}"],
        expires_in=TOKEN_SECONDS,
    )
    settings = user.settings
    request = HTTPRequest(
        url_path_join(spawner.server.url, CONTINUATION_CARRY_PATH),
        method="POST",
        body=b"{}",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        request_timeout=timeout,
        connect_timeout=10,
        follow_redirects=False,
    )
    context = make_ssl_context(
        settings.get("internal_ssl_key"), settings.get("internal_ssl_cert"), cafile=settings.get("internal_ssl_ca")
    )
    if context is not None:
        request.ssl_options = context
    client = AsyncHTTPClient(force_instance=True, max_body_size=MAX_ANSWER)
    try:
        answer = await client.fetch(request)
        notebooks = json.loads(answer.body).get("notebooks")
    except HTTPClientError as e:
        why = f"it answered HTTP {e.code}" if e.code != 599 else f"it did not answer within {timeout:g} s"
        raise ContinueRefused(
            502, f"The session's kernels could not be carried out ({why}); nothing was stopped."
        ) from None
    except (OSError, ValueError, AttributeError) as e:
        raise ContinueRefused(
            502, f"The session's kernels could not be carried out ({e}); nothing was stopped."
        ) from None
    finally:
        client.close()
        _delete_token(user, token)
    if not isinstance(notebooks, dict):
        raise ContinueRefused(502, "The session's answer to the carry was not understood; nothing was stopped.")
    return notebooks


def _delete_token(user, token: str) -> None:
    row = orm.APIToken.find(user.db, token)
    if row is not None:
        user.db.delete(row)
        user.db.commit()


async def continue_session(handler, spawner) -> dict:
    """The three steps (the module's words) for the user's running `spawner`, from `handler` (a hub handler,
    whose JupyterHub methods stop and start servers as its own API does); -> what the answer says."""
    check_can_continue(spawner)
    carry = spawner.settings.sessions.continuation
    spawner.continuing = True
    try:
        old_job, options = spawner.job_id, successor_options(spawner.user_options, spawner.job_id)
        notebooks = await carry_out(spawner, MOST_KERNELS * (carry.dump_seconds + 10) + 30)
        log.info("%s continues job %s: %s", log_name(spawner), old_job, carried_words(notebooks))
        user = spawner.user
        words = f"Continued from job {old_job}: {carried_words(notebooks)}."
        await handler.stop_single_user(user, spawner.name)
        # JupyterHub drops a stopped server's spawner: the new one, made now, starts the new job; its card says
        # what was carried while it starts and runs (in the hub's memory: a restarted hub has it no more)
        user.spawners[spawner.name].continued = words
        await handler.spawn_single_user(user, spawner.name, options=options)
    finally:
        spawner.continuing = False
    return {
        "server": spawner.name,
        "continued_from": old_job,
        "notebooks": notebooks,
        "words": words,
        "url": handler.hub.base_url
        + f"spawn-pending/{user.escaped_name}"
        + (f"/{spawner.name}" if spawner.name else ""),
    }

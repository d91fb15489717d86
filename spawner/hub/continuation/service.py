"""A running session continued in a new Slurm job of the same shape, its kernels' variables carried (hub side).

The steps, each bounded:
1. The session's server carries its notebooks' kernels out (spawner/jupyter/continuation/), asked at its own
   address with a token made for this one call (the owner's, for that server alone, deleted after; the portal's
   APIs refuse it as they refuse a session's token): a hub that restarted holds no session token of its own.  A
   carry that fails stops nothing, and says why; so does a kernel still running a cell, unless the caller says
   to continue anyway (its variables are then not carried).
2. The old job is stopped as JupyterHub stops any server (the route first, then scancel), and the hub waits
   until it is gone.
3. The same server starts again with the same options (partition, GPU type, GPUs, account, QOS, hours) and
   `continue_from: OLD_JOB`: its Jupyter server gives each notebook its variables back as JupyterLab opens it.
   A new job that does not start leaves the carried variables to the session's next start (the user's record).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from jupyterhub.utils import url_escape_path, url_path_join
from tornado import web
from tornado.httpclient import HTTPClientError

from ...contract import CONTINUATION_CARRY_PATH
from ..base.internalcall import post_as
from ..base.logname import log_name
from ..session.token import SESSION_CALL_NOTE
from ..session.userrecord import save_user_record, user_record

log = logging.getLogger("JupyterHub").getChild("continuation")

MAX_ANSWER = 256 * 1024  # the server's summary of what it carried
MAX_NOTEBOOKS = 100  # notebooks one summary may name
CARRY_WAIT = 900.0  # seconds the hub waits for a carry at most, however many kernels write
STOP_WAIT = 120.0  # seconds the hub waits for the old job to be gone


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
    """'2 notebook(s): 41 variable(s) carried, 2 not' (pure; `notebooks` as `checked_summary` returns it)."""
    carried = sum(n["carried"] for n in notebooks.values())
    missed = sum(len(n["not"]) for n in notebooks.values())
    refused = sum(1 for n in notebooks.values() if n.get("refused"))
    words = f"{len(notebooks)} notebook(s): {carried} variable(s) carried, {missed} not"
    return words + (f"; {refused} kernel(s) carried nothing" if refused else "")


def checked_summary(found: object) -> dict:
    """The session's answer -> {notebook path: {"carried": int, "not": {str: str}, "refused"?: str, "busy"?: True}};
    ValueError for anything else (the answer comes from code the user, or a guest, runs; pure)."""
    if not isinstance(found, dict) or not isinstance(found.get("notebooks"), dict):
        raise ValueError("no notebooks in it")
    notebooks = {}
    for path, entry in list(found["notebooks"].items())[:MAX_NOTEBOOKS]:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("carried"), int)
            or isinstance(entry.get("carried"), bool)
        ):
            raise ValueError(f"{str(path)[:80]!r} is not a notebook's summary")
        missed = entry.get("not", {})
        if not isinstance(missed, dict) or not all(isinstance(v, str) for v in missed.values()):
            raise ValueError(f"{str(path)[:80]!r} is not a notebook's summary")
        notebooks[str(path)] = {"carried": entry["carried"], "not": {str(k): v for k, v in missed.items()}}
        if isinstance(entry.get("refused"), str):
            notebooks[str(path)]["refused"] = entry["refused"]
        if entry.get("busy") is True:
            notebooks[str(path)]["busy"] = True
    return notebooks


def check_can_continue(spawner) -> None:
    """ContinueRefused unless the session runs, is not starting or stopping, and no continuation is under way."""
    if not spawner.settings.sessions.continuation.enabled:
        raise ContinueRefused(403, "The admin has not enabled continuing sessions here.")
    if getattr(spawner, "continuing", False):
        raise ContinueRefused(409, "This session is being continued already; wait for its new session.")
    if spawner.pending or not spawner.ready or not spawner.job_id:
        raise ContinueRefused(409, "Only a running session can be continued; start it, or wait for it to start.")


async def carry_out(spawner, timeout: float) -> dict:
    """Ask the session's server to carry its kernels out; -> its checked summary.  ContinueRefused (502) with
    the reason when it does not answer in time, refuses, or answers what is not a summary."""
    user = spawner.user
    nothing = "; nothing was stopped."
    try:
        answer = await post_as(
            user,
            url_path_join(spawner.server.url, CONTINUATION_CARRY_PATH),
            b"{}",
            note=SESSION_CALL_NOTE + log_name(spawner),
            scopes=[f"access:servers!server={user.name}/{spawner.name}"],
            timeout=timeout,
            max_body=MAX_ANSWER,
            connect_timeout=10,
        )
        return checked_summary(json.loads(answer.body))
    except HTTPClientError as e:
        why = f"it answered HTTP {e.code}" if e.code != 599 else f"no answer within {timeout:g} s, or one too long"
        raise ContinueRefused(502, f"The session's kernels could not be carried out ({why}){nothing}") from None
    except (OSError, ValueError, RecursionError) as e:
        raise ContinueRefused(502, f"The session's kernels could not be carried out ({e}){nothing}") from None


def refuse_busy(notebooks: dict, force: bool) -> None:
    """ContinueRefused (409) when a kernel was still running a cell and the caller did not say to go on."""
    busy = sorted(path for path, n in notebooks.items() if n.get("busy"))
    if busy and not force:
        raise ContinueRefused(
            409,
            f"A cell is still running in {', '.join(busy[:3])}: its variables were not carried, and nothing was "
            'stopped. Wait for it or interrupt it, then continue again (or continue anyway: {"force": true}).',
        )


async def stopped(handler, user, name: str) -> None:
    """The old job stopped (JupyterHub's stop, awaited until it is done, at most STOP_WAIT s)."""
    await handler.stop_single_user(user, name)
    deadline = time.monotonic() + STOP_WAIT
    while name in user.spawners and user.spawners[name].pending == "stop":  # JupyterHub stops on past its wait
        if time.monotonic() > deadline:
            raise TimeoutError(f"the old job was not gone within {STOP_WAIT:g} s")
        await asyncio.sleep(0.5)


def keep_for_next_start(spawner, name: str, old_job: str) -> None:
    """The carried variables of `old_job` wait for the session's next start (submit.py forgets them once it
    submitted the job that loads them)."""
    user_record(spawner).continuations[name] = old_job
    save_user_record(spawner)


async def continue_session(handler, spawner, force: bool = False) -> dict:
    """The three steps (the module's words) for the user's running `spawner`, from `handler` (a hub handler,
    whose JupyterHub methods stop and start servers as its own API does); -> what the answer says."""
    check_can_continue(spawner)
    carry, user, name = spawner.settings.sessions.continuation, spawner.user, spawner.name
    spawner.continuing = True
    try:
        old_job, options = spawner.job_id, successor_options(spawner.user_options, spawner.job_id)
        notebooks = await carry_out(spawner, min(CARRY_WAIT, 10 * (carry.dump_seconds + 10) + 30))
        refuse_busy(notebooks, force)
        words = f"Continued from job {old_job}: {carried_words(notebooks)}."
        log.info("%s continues job %s: %s", log_name(spawner), old_job, carried_words(notebooks))
        kept = f"Its variables are kept for the session's next start: press Start on the home page (job {old_job})."
        keep_for_next_start(spawner, name, old_job)  # until its new job is submitted (a start failing later too)
        try:
            await stopped(handler, user, name)
            # JupyterHub drops a stopped server's spawner: the new one starts the new job; its card says what was
            # carried while it starts and runs (in the hub's memory: a restarted hub has it no more)
            user.spawners[name].continued = words
            await handler.spawn_single_user(user, name, options=options)
        except Exception as e:  # whatever stops the new job's start: the carried variables wait for the next
            why = (e.log_message if isinstance(e, web.HTTPError) else str(e)) or type(e).__name__
            log.warning("%s's continuation of job %s did not start its new job: %s", log_name(spawner), old_job, why)
            raise ContinueRefused(503, f"The new job did not start ({why}). {kept}") from None
    finally:
        spawner.continuing = False
    path = f"spawn-pending/{url_escape_path(user.name)}" + (f"/{url_escape_path(name)}" if name else "")
    return {
        "server": name,
        "continued_from": old_job,
        "notebooks": notebooks,
        "words": words,
        "url": handler.hub.base_url + path,
    }

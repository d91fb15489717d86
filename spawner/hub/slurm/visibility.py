"""Whether Slurm hides other users' jobs from the hub's account (hub side; the rules: spawner/slurmprivacy.py).

A session missing from a listing that succeeded is a session whose job has ended, unless the listing could
not show it: with `PrivateData=jobs` an account without the privilege to see through it sees only its own
jobs, and every running session would be taken for ended (its route removed, its token deleted, while its job
kept its GPUs).  So before the hub believes a job gone it asks, at most every CHECK_SECONDS, whether Slurm
hides jobs from it; if it does, the job's state is unknown (as in a Slurm outage: the session is kept, until its
time limit has passed: spawner/hub/session/state.py) and the log says, once a minute, what the admin must
change.  Asked only when a listing lacks a job the hub follows: nothing on the common path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import time
from collections.abc import Awaitable, Callable

from ...slurmprivacy import (
    Privacy,
    config_argv,
    hidden_from,
    parse_privacy,
    parse_privilege,
    privilege_argv,
    what_to_change,
)

log = logging.getLogger("dsportal.slurm")

CHECK_SECONDS = 10.0  # a verdict is reused this long (a site may switch PrivateData on with `scontrol reconfigure`)
TELL_SECONDS = 60.0  # the admin's error line at most this often

Read = Callable[[list[str], Callable[[str], object]], Awaitable[object]]


class JobVisibility:
    """Asks `sacctmgr show config` (slurm.conf's and slurmdbd.conf's PrivateData) and, where something is private,
    the account's own sacctmgr record; one question for every caller, its answer kept CHECK_SECONDS.

    A question that fails (slurmdbd down, a command missing) keeps the last verdict, or none hidden before the
    first: a failed check must not turn every ended session into one the hub keeps for ever."""

    def __init__(self, read: Read, sacctmgr: str, account: str | None = None):
        self._read = read
        self._sacctmgr = sacctmgr
        self.account = account or pwd.getpwuid(os.geteuid()).pw_name  # not $USER: the process's own account
        self._asked = -CHECK_SECONDS
        self._hidden: list[str] = []
        self._privacy = Privacy()
        self._inflight: asyncio.Future | None = None
        self._told = -TELL_SECONDS
        self.hides_jobs_now = False  # the latest verdict, for callers that cannot wait (spawner/hub/session/limits.py)

    async def hidden(self) -> list[str]:
        """The PrivateData flags that hide what the hub needs ([] when none).  A caller while a question is in
        flight waits for its answer: every session missing from one listing gets the same verdict."""
        if self._inflight is None or self._inflight.done():
            if time.monotonic() - self._asked < CHECK_SECONDS:
                return self._hidden
            self._inflight = asyncio.ensure_future(self._ask())
        return await asyncio.shield(self._inflight)

    async def hides_jobs(self) -> bool:
        """Whether a job missing from the hub's listing may be a job Slurm hides (then it is not gone)."""
        hidden = await self.hidden()
        if "jobs" in hidden and time.monotonic() - self._told >= TELL_SECONDS:
            self._told = time.monotonic()
            log.error(
                "%s; until then the hub cannot tell a running session from an ended one and keeps them all",
                what_to_change(self.account, hidden, [], self._privacy),
            )
        return "jobs" in hidden

    async def _ask(self) -> list[str]:
        self._asked = time.monotonic()
        try:
            privacy = await self._read(config_argv(self._sacctmgr), parse_privacy)
            hidden: list[str] = []
            if privacy.flags:
                privilege = await self._read(
                    privilege_argv(self._sacctmgr, self.account), lambda out: parse_privilege(out, self.account)
                )
                hidden = hidden_from(privacy, privilege)
        except RuntimeError as e:  # a SlurmError (client.py's, which imports this module): the last verdict stands
            log.warning("Could not ask Slurm what it keeps private (%s); keeping the last answer", e)
            return self._hidden
        self._privacy, self._hidden = privacy, hidden
        self.hides_jobs_now = "jobs" in hidden
        return hidden

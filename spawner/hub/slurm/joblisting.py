"""One shared listing of every user's jobs: one squeue and one sacct for everyone (hub side).

A jobs panel asks for its user's jobs every few seconds; at 100 open panels
that must not become 100 squeue calls.  Callers within `runs.list_seconds` of
the last squeue (and `runs.accounting_seconds` of the last sacct) share its
answer, and a call in flight is joined, not repeated: Slurm's calls per
minute follow the cadence, not the number of users or jobs.  Each answer is
indexed by user once.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import TypeVar

from portal.settings import RunSettings

from ...slurmvocab import AccountedJob, ListedJob
from .client import SlurmClient, SlurmError
from .clusterinfo import SharedAnswers

ByUser = dict[str, list]
Answer = TypeVar("Answer")


def by_user(jobs: list) -> ByUser:
    index: ByUser = defaultdict(list)
    for job in jobs:
        index[job.user].append(job)
    return dict(index)


# s a user's listing waits for Slurm's new answer when an older one is at hand; then it shows the older (its
# age is at most a listing's period more): a slow squeue or sacct under load slows no one's page
STALE_WAIT = 0.5
# s: a start, run or sweep the GPU cap would refuse for the user's runs is judged again on a squeue asked for then
# (or one under way), waited for this long at most (then the older answer stands: a silent Slurm stalls no one).
# The shared listing may be a listing period old, or older while a new squeue is slow (STALE_WAIT), and a run
# the user cancelled a moment ago still held its GPUs there (CI: a 4-GPU run refused for the 4-GPU run that had
# just ended).  Only a refusal asks: each user's are bounded by the API's rate, and callers of a moment share one.
RECHECK_WAIT = 2.0


class JobListing:
    def __init__(self, client: SlurmClient, runs: RunSettings):
        self.client = client
        self.days = runs.history_days
        self._queue = SharedAnswers(runs.list_seconds)
        self._accounting = SharedAnswers(runs.accounting_seconds)
        self._last: dict[str, ByUser] = {}  # the last answer of each source: shown while Slurm does not answer
        self._derived: dict[tuple, object] = {}  # what was computed from the last answers (a sweep's counts)

    @property
    def calls(self) -> int:  # squeue + sacct calls made; read by the benchmark
        return self._queue.calls + self._accounting.calls

    async def _queued(self) -> ByUser:
        return by_user(await self.client.all_jobs())

    async def _accounted(self) -> ByUser:
        return by_user(await self.client.accounting(self.days))

    async def queued(self) -> ByUser:
        """Every user's jobs squeue lists, by user (SlurmError when it did not answer)."""
        return await self._queue.get("queue", self._queued)

    async def accounted(self) -> ByUser:
        """Every user's jobs of the last days from Slurm's accounting, by user (SlurmError without it)."""
        return await self._accounting.get("accounting", self._accounted)

    async def of_user(
        self, username: str, fresh: bool = False
    ) -> tuple[list[ListedJob], list[AccountedJob], list[str]]:
        """(listed, accounted, problems): what each source says of the user's jobs; a source that did not
        answer gives [] and a sentence in `problems`, the other still serves.  `fresh`: squeue asked now (or one
        under way), waited for RECHECK_WAIT at most (a refusal judged again)."""
        problems = []
        wait, max_age = (RECHECK_WAIT, 0.0) if fresh else (STALE_WAIT, None)
        # both at once: one after the other, a page waited STALE_WAIT twice for a busy Slurm (the soak's 1-s promise)
        queue, accounting = await asyncio.gather(
            self._queue.get("queue", self._queued, wait=wait, max_age=max_age),
            self._accounting.get("accounting", self._accounted, wait=STALE_WAIT),
            return_exceptions=True,
        )
        for source, answer, problem in (
            ("queue", queue, "Slurm is not answering; the jobs below may be out of date."),
            ("accounting", accounting, "Slurm's accounting (slurmdbd) is not answering; finished jobs may be missing."),
        ):
            if isinstance(answer, SlurmError):
                problems.append(problem)
            elif isinstance(answer, BaseException):
                raise answer
            else:
                self._keep(source, answer)
        listed = self._last.get("queue", {}).get(username, [])
        accounted = self._last.get("accounting", {}).get(username, [])
        return listed, accounted, problems

    def _keep(self, source: str, answer: ByUser) -> None:
        if answer is not self._last.get(source):
            self._last[source] = answer
            self._derived.clear()  # a new answer: what was derived from the old one is stale

    def derived(self, user: str, key: tuple, compute: Callable[[], Answer]) -> Answer:
        """compute() of the user's jobs, kept until a source gives a new answer (every runs.list_seconds at
        most): a panel's request then recomputes nothing that the listing has not changed."""
        found = self._derived.get((user, *key))
        if found is None:
            found = self._derived[(user, *key)] = compute()
        return found  # type: ignore[return-value]

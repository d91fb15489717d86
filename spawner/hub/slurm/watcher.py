"""One shared `squeue` listing of every job, by id (the hub side's view of Slurm).

Spawners asking at the same moment share one call, and a poll may reuse a
listing a few seconds old instead of running squeue again; so the number of
Slurm queries follows the poll cadence, not the number of sessions.  The
reconciler (spawner/hub/session/reconciler.py) reads the same listing.  Kept apart
from the commands (spawner/hub/slurm/client.py) as kubespawner keeps its reflector
apart from its API client.

The listing holds every job Slurm shows, not only those of the portal's
name: a session's owner may rename its job (`scontrol update JobName=...`),
and a renamed session is still the hub's to follow, stop and cancel.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from ...slurmvocab import JobInfo

Listing = dict[str, JobInfo]


class JobWatcher:
    """One squeue call for every caller of the same moment; answers reused up to `max_age` s."""

    def __init__(self, query: Callable[[], Awaitable[Listing]]):
        self._query = query
        self._listing: tuple[float, Listing] | None = None
        self._inflight: asyncio.Future | None = None
        self.calls = 0  # squeue calls made; read by the benchmark

    async def listing(self, max_age: float = 0.0) -> Listing:
        """Every job Slurm lists, by id (an exception if Slurm did not answer readably).

        The answer comes from a query that began at most `max_age` s before this
        call; with 0, one that began after it.  A job submitted while an older
        query ran is missing from that one's answer, and missing means "gone".
        """
        asked = time.monotonic()
        while True:
            if self._listing and self._listing[0] >= asked - max_age and (max_age > 0 or self._listing[0] >= asked):
                return self._listing[1]
            if self._inflight is None or self._inflight.done():
                self._inflight = asyncio.ensure_future(self._refresh())
            # shield: one caller giving up (a cancelled start) must not cancel the others' answer
            began, found = await asyncio.shield(self._inflight)
            if began >= asked - max_age:
                return found

    async def _refresh(self) -> tuple[float, Listing]:
        await asyncio.sleep(0)  # let callers of this same moment join
        began = time.monotonic()
        self.calls += 1
        found = await self._query()
        if self._listing is None or began >= self._listing[0]:
            self._listing = (began, found)
        return began, found

    async def settled(self) -> None:
        """Wait until no query is in flight (its answer or error stays its callers' business).

        For an orderly end of the event loop: a subprocess still starting when
        the loop cancels every task never finishes (CPython 3.11 awaits its exit
        while its pipes, whose connecting task was cancelled too, never close).
        """
        if self._inflight is not None and not self._inflight.done():
            await asyncio.wait({self._inflight})

    async def status(self, job_id: str, max_age: float = 0.0) -> JobInfo | None:
        """The job's entry; None when a listing that succeeded does not hold it (Slurm says: gone)."""
        return (await self.listing(max_age)).get(job_id)

    def last_known(self, job_id: str) -> JobInfo | None:
        """From the latest listing, without asking Slurm (for pages, which cannot wait)."""
        return self._listing[1].get(job_id) if self._listing else None

    def listed(self) -> bool:
        return self._listing is not None

    def listing_began(self) -> float | None:
        """When (time.monotonic()) the query of the latest listing began; None before the first one."""
        return self._listing[0] if self._listing else None

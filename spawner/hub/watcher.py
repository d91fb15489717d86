"""One shared `squeue` for every watched session job (the hub side's view of Slurm).

Spawners asking at the same moment share one call, and a poll may reuse an
answer a few seconds old instead of running squeue again; so the number of
Slurm queries follows the poll cadence, not the number of sessions.  Kept
apart from the commands (spawner/hub/slurm.py) as kubespawner keeps its
reflector apart from its API client.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from .slurm import JobInfo


class JobWatcher:
    """One squeue call for every watched job, shared by all spawners."""

    def __init__(self, query: Callable[[list[str]], Awaitable[dict[str, JobInfo]]]):
        self._query = query
        self._watched: set[str] = set()
        self._cache: dict[str, tuple[float, JobInfo | None]] = {}
        self._waiters: list[asyncio.Future] = []
        self._task: asyncio.Task | None = None
        self.calls = 0  # squeue calls made; read by the benchmark

    async def status(self, job_id: str, max_age: float = 0.0) -> JobInfo | None:
        """Job state (None = Slurm no longer knows the job); may reuse an answer up to `max_age` s old."""
        cached = self._cache.get(job_id)
        if cached and max_age > 0 and time.monotonic() - cached[0] <= max_age:
            return cached[1]
        self._watched.add(job_id)
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._flush())
        await waiter
        return self._cache[job_id][1]

    def forget(self, job_id: str) -> None:
        self._watched.discard(job_id)
        self._cache.pop(job_id, None)

    async def _flush(self) -> None:
        while self._waiters:
            await asyncio.sleep(0)  # let callers of this same moment join
            waiters, self._waiters = self._waiters, []
            ids = sorted(self._watched, key=int)
            try:
                self.calls += 1
                found = await self._query(ids)
            except Exception as e:  # handed to every waiter, who decides
                for w in waiters:
                    if not w.done():
                        w.set_exception(e)
                continue
            now = time.monotonic()
            for job_id in ids:
                info = found.get(job_id)
                self._cache[job_id] = (now, info)
                if info is None or not info.in_queue:
                    self._watched.discard(job_id)
            for w in waiters:
                if not w.done():
                    w.set_result(None)

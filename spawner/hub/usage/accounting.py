"""Slurm's accounting of what jobs used, shared by everyone, and filled into ended sessions' summaries (hub side).

One `sacct` of every user's jobs and steps of the last `usage.days` days
serves every usage page and the filling-in for `usage.accounting_seconds`
(spawner/hub/slurm/clusterinfo.py's SharedAnswers): Slurm's calls follow the
cadence, not the number of users.  A session's summary is first made from
its own report; once its job is in the accounting (slurmdbd writes it when
the job ends), Slurm's CPU time and peak memory replace the session's.
Without accounting (no slurmdbd) the summaries keep the session's numbers.
GPU-hours never come from the session: the hub counts the GPUs it gave
times the time it saw the job run, and Slurm's GPUs x elapsed time replace
that in the usage log, the metrics' counter gaining whatever Slurm counted
beyond the hub (a counter only grows).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from portal.settings import UsageSettings

from ...slurmaccounting import UsedJob
from ...slurmvocab import parse_end
from ..base.metrics import USER_GPU_HOURS
from ..session.usagelog import with_accounting
from ..session.userrecord import save_user_record, user_record
from ..slurm.client import SlurmClient, SlurmError
from ..slurm.clusterinfo import SharedAnswers

log = logging.getLogger("JupyterHub").getChild("usage")

SETTLE = timedelta(seconds=30)  # an ended job's accounting is taken this long after its end, its steps' in

NO_ACCOUNTING = (
    "Slurm's accounting (slurmdbd) does not answer, so GPU-hours and Slurm's CPU and memory figures cannot be "
    "shown now; the sessions' own readings below still are. Try again later, or tell the cluster's admins."
)


class UsageListing:
    def __init__(self, client: SlurmClient, usage: UsageSettings):
        self.client = client
        self.days = usage.days
        self._answers = SharedAnswers(usage.accounting_seconds)

    @property
    def calls(self) -> int:
        return self._answers.calls

    async def jobs(self) -> dict[str, UsedJob]:
        """Every user's jobs of the last days by job id (SlurmError when the accounting does not answer)."""
        return await self._answers.get("usage", self._read)

    async def _read(self) -> dict[str, UsedJob]:
        return {job.job_id: job for job in await self.client.usage(self.days)}


def waiting(history: list[dict], usage_log: list[dict], now: datetime, days: int) -> set[str]:
    """Jobs of ended sessions whose summaries still lack Slurm's numbers, of the last `days` days (pure)."""
    since = (now - timedelta(days=days)).isoformat(timespec="minutes")
    pending = {
        e["job_id"]
        for e in history
        if isinstance(e.get("usage"), dict) and e["usage"].get("source") == "session" and e.get("ended", "") >= since
    }
    pending |= {e["job_id"] for e in usage_log if not e.get("accounted") and e.get("ended", "") >= since}
    return pending


def settled(job: UsedJob, now: datetime) -> bool:
    """Whether Slurm's accounting of an ended job is whole: its steps' figures (the batch step's CPU time) reach
    slurmdbd from the node after the job's end, seconds later on a busy cluster, and a job read at once showed
    0% CPU where its batch step had used more (pure)."""
    end = parse_end(job.end)
    return end is not None and now - end >= SETTLE


def fill(
    history: list[dict], usage_log: list[dict], jobs: dict[str, UsedJob], user: str, now: datetime
) -> tuple[bool, float]:
    """Slurm's numbers into the summaries and log lines of `user`'s ended jobs it has accounted, once settled:
    (whether any changed, the GPU-hours Slurm counted beyond what the hub had counted of them, for the metrics).
    A job of the same id but another user (Slurm's ids start again after its state is lost) is not theirs."""
    jobs = {job_id: job for job_id, job in jobs.items() if job.user == user and settled(job, now)}
    changed = False
    beyond = 0.0
    for entry in history:
        job = jobs.get(entry.get("job_id", ""))
        usage = entry.get("usage")
        if job and isinstance(usage, dict) and usage.get("source") == "session":
            entry["usage"] = with_accounting(usage, job.use())
            changed = True
    for entry in usage_log:
        job = jobs.get(entry.get("job_id", ""))
        if job and not entry.get("accounted"):
            if "gpu_hours" in entry:  # counted by the hub at the session's end (a line of an older hub was not)
                beyond += max(0.0, job.gpu_hours - entry["gpu_hours"])
                entry["gpu_hours"] = max(job.gpu_hours, entry["gpu_hours"])
            entry.update(cpu_efficiency=job.cpu_efficiency, hours=round(job.elapsed_seconds / 3600, 3), accounted=True)
            changed = True
    return changed, beyond


async def fill_once(listing: UsageListing, records: Iterable, days: int) -> int:
    """Fill the users' records (spawner/hub/session/userrecord.py, one spawner of each user in `records`) that wait
    for Slurm; how many changed."""
    now = datetime.now()
    owners = [s for s in records if waiting(user_record(s).history, user_record(s).usage_log, now, days)]
    if not owners:
        return 0  # no sacct when nothing waits
    jobs = await listing.jobs()
    changed = 0
    for spawner in owners:
        try:
            record = user_record(spawner)
            filled, beyond = fill(record.history, record.usage_log, jobs, spawner.user.name, now)
            if filled:
                USER_GPU_HOURS.labels(spawner.user.name).inc(beyond)
                save_user_record(spawner)
                changed += 1
        except Exception:  # noqa: BLE001 - one user's records must not keep the others' from Slurm's numbers
            log.exception("Filling Slurm's accounting into %s's summaries failed", spawner.user.name)
    return changed


async def keep_filling(listing: UsageListing, spawners: Callable[[], list], seconds: float, days: int) -> None:
    while True:
        await asyncio.sleep(seconds)
        try:
            owners = list({s.user.name: s for s in spawners()}.values())  # one of each user's sessions
            await fill_once(listing, owners, days)
        except SlurmError as e:
            log.warning("Slurm's accounting for the sessions' summaries: %s", e)
        except Exception:  # noqa: BLE001 - one failed pass must not end the loop
            log.exception("Filling Slurm's accounting into the sessions' summaries failed")


def usage_listing(services) -> UsageListing:
    """The one shared listing, kept by the hub's services (spawner/hub/slurm/services.py)."""
    return services.shared(("usage listing",), lambda: UsageListing(services.client, services.settings.usage))

"""Extending a running session: one more `slurm.extend_step_hours`, within the admin's and Slurm's limits (hub side).

The rule is pure (`extension`); `extend_session` applies it to a session
through the root helper (spawner/root/extend.py, run by the Slurm client).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from portal.settings import SlurmSettings

from ..base.logname import log_name
from ..request.resources import duration_words
from ..slurm.client import JobInfo, SlurmError

if TYPE_CHECKING:
    from ..session.spawner import SlurmGPUSpawner


def seconds_left(info: JobInfo | None, now: datetime) -> int | None:
    """Seconds until the job's end as Slurm last listed it; None without a known end."""
    if info is None or not info.end:
        return None
    return max(0, int((datetime.fromisoformat(info.end) - now).total_seconds()))


class ExtendRefused(Exception):
    """An extension the user cannot have; `status` is the HTTP status, the text what they read."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Limits:
    """The admin's extension rules (slurm.allow_extend, extend_step_hours, extend_max_hours)."""

    allow_extend: bool = False
    step_minutes: int = 60
    max_minutes: int = 0


def limits_of(slurm: SlurmSettings) -> Limits:
    return Limits(slurm.allow_extend, round(slurm.extend_step_hours * 60), round(slurm.extend_max_hours * 60))


def extension(minutes: int, limits: Limits) -> tuple[int | None, str]:
    """(the new limit in minutes, "") or (None, why not) for one more extension of a session of `minutes`."""
    if not limits.allow_extend:
        return None, "Extending sessions is not enabled on this portal."
    new = minutes + limits.step_minutes
    if new > limits.max_minutes:
        return None, (
            f"Your session already has {duration_words(minutes)}; with extensions a session may last "
            f"at most {duration_words(limits.max_minutes)} here."
        )
    return new, ""


async def extend_session(spawner: SlurmGPUSpawner) -> None:
    """Give the spawner's running session one more step; raises ExtendRefused with what the user reads."""
    record = spawner.record
    if not (spawner.job_id and record.start_done and not record.stopping):
        raise ExtendRefused("You have no running session to extend.", 409)
    resources = spawner.current_resources()
    minutes = record.minutes or (resources.minutes if resources else 0)
    slurm = spawner.settings.slurm
    new, why = extension(minutes, limits_of(slurm))
    if new is None:
        raise ExtendRefused(why, 400 if slurm.allow_extend else 403)
    client = spawner.slurm_client
    try:
        await client.extend(spawner.job_id, new)
    except SlurmError as e:
        spawner.log.warning("Extending job %s of %s to %s min: %s", spawner.job_id, log_name(spawner), new, e)
        if e.returncode == 3:  # the helper refused, in words for the user (spawner/root/extend.py)
            raise ExtendRefused(e.stderr, 400) from None
        raise ExtendRefused(
            "The session could not be extended right now (the scheduler did not do it); "
            "try again in a minute, or tell the cluster admins if this persists.",
            503,
        ) from None
    record.minutes = new
    record.limit = duration_words(new)
    spawner.save_state()
    spawner.log.info("Session job %s of %s extended to %s", spawner.job_id, log_name(spawner), record.limit)
    try:
        spawner.job_info = await client.status(spawner.job_id) or spawner.job_info  # the new end time
    except SlurmError:
        pass

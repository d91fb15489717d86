"""An ended session's summary, its line in the user's usage log, and its GPU-hours (hub side, pure)."""

from __future__ import annotations

from datetime import datetime

from ..usage import Allocation, JobUse, UsageTally, summarise
from .resources import Resources

LOG_KEEP = 200  # sessions in the usage log: the usage page's efficiency over time


def allocation_of(resources: Resources | None) -> Allocation:
    if resources is None:
        return Allocation(gpus=0, cpus=0, memory_mib=0)
    return Allocation(gpus=resources.gpus, cpus=resources.cpus, memory_mib=resources.memory_mib)


def tally_of(reported: dict) -> UsageTally | None:
    """The session's last report (checked when it came); None when it never reported."""
    try:
        return UsageTally.from_dict(reported) if reported else None
    except ValueError:
        return None


def session_usage(reported: dict, given: Allocation, job: JobUse | None = None) -> dict:
    """The history entry's "usage": the summary, with the tally and the allocation it was made from, so that
    Slurm's numbers can be filled in later (spawner/hub/usage/accounting.py)."""
    return {
        **summarise(tally_of(reported), job, given),
        "tally": dict(reported),
        "given": {"gpus": given.gpus, "cpus": given.cpus, "memory_mib": given.memory_mib},
    }


def live_usage(reported: dict, resources: Resources | None) -> list[str]:
    """A running session's use so far in words, from its last report, without advice (its card)."""
    tally = tally_of(reported)
    if tally is None:
        return []
    summary = summarise(tally, None, allocation_of(resources))
    return [line for line in summary["lines"] if line != summary["advice"]]


def with_accounting(usage: dict, job: JobUse) -> dict:
    """A history entry's usage again, with Slurm's CPU time and memory."""
    given = Allocation(**usage.get("given", {"gpus": 0, "cpus": 0, "memory_mib": 0}))
    return session_usage(usage.get("tally") or {}, given, job)


def log_entry(job_id: str, ended: datetime, partition: str, usage: dict) -> dict:
    """The usage log's line of one session: what the usage page plots."""
    gpus = usage.get("gpus") or []
    return {
        "job_id": job_id,
        "ended": ended.isoformat(timespec="minutes"),
        "partition": partition,
        "gpus": usage.get("gpus_given", 0),
        "gpu_mean": round(sum(g["mean"] for g in gpus) / len(gpus)) if gpus else None,
        "gpus_worked": usage.get("gpus_worked", 0),
        "cpu_efficiency": usage.get("cpu_efficiency"),
        "hours": usage.get("hours", 0),
        "accounted": usage.get("source") == "slurm",
    }


def add_to_log(log: list[dict], entry: dict, keep: int = LOG_KEEP) -> list[dict]:
    return ([entry] + [e for e in log if e.get("job_id") != entry["job_id"]])[:keep]


def gpu_hours(usage: dict, wall_hours: float) -> tuple[float, float]:
    """(GPU-hours allocated, GPU-hours weighted by each GPU's mean utilisation) of one session.

    The tally is the user's own (their session reports it): its hours count no longer than the hub saw the
    session exist (`wall_hours`, from its submission to its end), and no more GPUs count busy than were
    given, each at most 100 %, so a forged report cannot lift the admins' efficiency ranking."""
    hours = min(usage.get("hours", 0) or 0, max(wall_hours, 0.0))
    given = usage.get("gpus_given", 0) or 0
    means = sorted((min(g["mean"], 100) for g in usage.get("gpus") or []), reverse=True)[:given]
    return given * hours, sum(means) / 100 * hours


def wall_hours(submitted: str, ended: datetime) -> float:
    """Hours from the submission (ISO, to the minute: a minute is added) to the end; 0 when not known."""
    try:
        return max(0.0, (ended - datetime.fromisoformat(submitted)).total_seconds() + 60) / 3600
    except ValueError:
        return 0.0


def hours_left(end: str, now: datetime) -> float:
    """Hours from `now` to Slurm's end time of a running job ('2026-11-22T11:00:00', local); 0 when unknown."""
    try:
        return max(0.0, (datetime.fromisoformat(end) - now).total_seconds() / 3600)
    except ValueError:
        return 0.0

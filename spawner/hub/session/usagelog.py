"""An ended session's summary, its line in the user's usage log, and its GPU-hours (hub side, pure)."""

from __future__ import annotations

from datetime import datetime

from ...usage import Allocation, JobUse, UsageTally, summarise
from ..request.resources import Resources

LOG_KEEP = 200  # sessions in the usage log: the usage page's efficiency over time


def allocation_of(resources: Resources | None, per_gpu: int = 0) -> Allocation:
    """What the session was given (a share of a GPU as its fraction); `per_gpu`: the shares a GPU is cut into
    where its partition offers them (the advice says when one would have fitted)."""
    if resources is None:
        return Allocation(gpus=0, cpus=0, memory_mib=0)
    return Allocation(resources.gpu_share, resources.cpus, resources.memory_mib, per_gpu)


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
        "given": {"gpus": given.gpus, "cpus": given.cpus, "memory_mib": given.memory_mib, "per_gpu": given.per_gpu},
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


def log_entry(job_id: str, ended: datetime, partition: str, usage: dict, given: Allocation, hours: float) -> dict:
    """The usage log's line of one session: what the usage page plots.  Its hours and GPU-hours are the hub's
    (`hours`: from the job's start to its end, by the hub's clock), never the session's report; Slurm's
    accounting replaces them later (spawner/hub/usage/accounting.py)."""
    gpus = usage.get("gpus") or []
    entry = {
        "job_id": job_id,
        "ended": ended.isoformat(timespec="minutes"),
        "partition": partition,
        "gpus": given.gpus,
        "gpu_mean": round(sum(g["mean"] for g in gpus) / len(gpus)) if gpus else None,
        "gpus_worked": usage.get("gpus_worked", 0),
        "cpu_efficiency": usage.get("cpu_efficiency"),
        "hours": round(hours, 3),
        "gpu_hours": given.gpus * hours,  # what the metrics counted: Slurm's accounting adds what it finds beyond
        "accounted": usage.get("source") == "slurm",
    }
    if usage.get("gpu_energy_wh") is not None:  # where NVML reports power
        entry["gpu_energy_wh"] = usage["gpu_energy_wh"]
    return entry


def add_to_log(log: list[dict], entry: dict, keep: int = LOG_KEEP) -> list[dict]:
    return ([entry] + [e for e in log if e.get("job_id") != entry["job_id"]])[:keep]


def gpu_hours(gpus: int, hours: float, usage: dict) -> tuple[float, float]:
    """(GPU-hours allocated, GPU-hours weighted by each GPU's mean utilisation) of one session.

    Allocated: the GPUs the hub gave times the hours the hub saw the job run (`hours`, session_hours); the
    session's report plays no part, so a session that reports nothing, or `{}`, still counts in full.
    Busy: self-reported (the tally is the user's own: their session sends it), so bounded by what the hub
    knows: no more GPUs than were given, each at most 100 %, for no longer than `hours`; never more than
    the allocated GPU-hours, and 0 for a session that reported nothing."""
    hours = max(hours, 0.0)
    reported = min(usage.get("hours", 0) or 0, hours)
    means = sorted((min(max(g["mean"], 0), 100) for g in usage.get("gpus") or []), reverse=True)[:gpus]
    return gpus * hours, sum(means) / 100 * reported


def session_hours(started: str, submitted: str, ended: datetime) -> float:
    """Hours the session's job held its allocation, by the hub's clock: from when the hub saw it running
    (`started`, ISO to the second) to its end; without that, from its submission (ISO, to the minute: a
    minute is added, so never less than it ran); 0 when neither reads."""
    for since, slack in ((started, 0), (submitted, 60)):
        try:
            return max(0.0, (ended - datetime.fromisoformat(since)).total_seconds() + slack) / 3600
        except ValueError:
            continue
    return 0.0


def hours_left(end: str, now: datetime) -> float:
    """Hours from `now` to Slurm's end time of a running job ('2026-11-22T11:00:00', local); 0 when unknown."""
    try:
        return max(0.0, (datetime.fromisoformat(end) - now).total_seconds() / 3600)
    except ValueError:
        return 0.0

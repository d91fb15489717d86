"""The user's usage page's data: GPU-hours this week and month (in all, and per account and GPU type), per day, and
efficiency over time (hub side, pure).

GPU-hours are Slurm's (every job of the user's, sessions and runs and their
own sbatch jobs: GPUs allocated times the time they ran, within each window);
GPU utilisation is the portal's sessions' own (Slurm does not measure it),
from the user's usage log (spawner/hub/session/usagelog.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ...slurmaccounting import UsedJob
from ...usage import duration
from . import charts

DAYS_PLOTTED = 30
SESSION_KEYS = ("job_id", "ended", "partition", "gpus", "gpus_worked", "gpu_mean", "cpu_efficiency")  # the table's


def _span(job: UsedJob, now: datetime) -> tuple[datetime, datetime] | None:
    if not job.start or not job.gpu_share:
        return None
    start = datetime.fromisoformat(job.start)
    end = datetime.fromisoformat(job.end) if job.end else now
    return (start, end) if end > start else None


def gpu_hours_between(jobs: list[UsedJob], since: datetime, until: datetime) -> float:
    """GPU-hours of `jobs` that fell between `since` and `until` (a job across the edge counts its part)."""
    total = 0.0
    for job in jobs:
        span = _span(job, until)
        if span is None:
            continue
        overlap = (min(span[1], until) - max(span[0], since)).total_seconds()
        total += job.gpu_share * max(overlap, 0) / 3600
    return total


def split_gpu_hours(jobs: list[UsedJob], now: datetime, label=lambda kind: kind) -> list[dict]:
    """GPU-hours of the last 7 and 30 days per Slurm account and GPU type, the most used first:
    [{"account", "gpu_type", "week", "month"}]; `label` names a type as the form does (untyped: "GPUs")."""
    groups: dict[tuple[str, str], list[UsedJob]] = {}
    for job in jobs:
        if job.gpu_share:  # a share of a GPU counts its fraction
            groups.setdefault((job.account, job.gpu_type), []).append(job)
    rows = []
    for (account, kind), group in groups.items():
        month = gpu_hours_between(group, now - timedelta(days=30), now)
        if month > 0:  # a session of seconds is a row (0.0), a job of last quarter none
            rows.append(
                {
                    "account": account or "–",
                    "gpu_type": " + ".join(label(k) for k in kind.split("+")) if kind else "GPUs",
                    "week": round(gpu_hours_between(group, now - timedelta(days=7), now), 2),
                    "month": round(month, 2),
                }
            )
    return sorted(rows, key=lambda r: (-r["month"], r["account"], r["gpu_type"]))


def daily_gpu_hours(jobs: list[UsedJob], now: datetime, days: int = DAYS_PLOTTED) -> list[tuple[str, float]]:
    """[(day 'YYYY-MM-DD', GPU-hours that day)] for the last `days` days, oldest first."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    out = []
    for back in range(days - 1, -1, -1):
        day = today - timedelta(days=back)
        out.append(
            (day.strftime("%Y-%m-%d"), round(gpu_hours_between(jobs, day, min(day + timedelta(days=1), now)), 2))
        )
    return out


def usage_page(
    jobs: list[UsedJob] | None, usage_log: list[dict], now: datetime, accounting_error: str, label=lambda kind: kind
) -> dict:
    """Everything the usage page shows; `jobs`: the user's jobs from Slurm's accounting, None without it;
    `label` names a GPU type."""
    ended = sorted((e for e in usage_log if e.get("ended")), key=lambda e: e["ended"])
    gpu_line = "GPU utilisation of your sessions' GPUs (mean)"
    sessions = {
        gpu_line: [(e["ended"].replace("T", " "), e["gpu_mean"]) for e in ended if e.get("gpu_mean") is not None],
        "CPU efficiency of your sessions": [
            (e["ended"].replace("T", " "), e["cpu_efficiency"]) for e in ended if e.get("cpu_efficiency") is not None
        ],
    }
    answer = {
        "error": accounting_error,
        "week_gpu_hours": None,
        "month_gpu_hours": None,
        "sessions": [
            {**{k: e.get(k) for k in SESSION_KEYS}, "length": duration(e.get("hours") or 0)} for e in reversed(ended)
        ],
        "figures": {},
        "split": [],
    }
    if jobs is not None:
        finished = sorted((j for j in jobs if j.end and j.cpu_efficiency is not None), key=lambda j: j.end)
        sessions["CPU efficiency of all your jobs (Slurm)"] = [
            (j.end.replace("T", " "), j.cpu_efficiency) for j in finished
        ]
        answer["week_gpu_hours"] = round(gpu_hours_between(jobs, now - timedelta(days=7), now), 2)
        answer["month_gpu_hours"] = round(gpu_hours_between(jobs, now - timedelta(days=30), now), 2)
        answer["split"] = split_gpu_hours(jobs, now, label)
        days = daily_gpu_hours(jobs, now)
        answer["figures"]["daily"] = charts.bars(
            f"GPU-hours per day, last {DAYS_PLOTTED} days", "GPU-hours", [d for d, _ in days], [h for _, h in days]
        )
    answer["figures"]["efficiency"] = charts.points("Efficiency over time", "%", sessions, joined=(gpu_line,))
    return answer

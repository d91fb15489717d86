"""Slurm's accounting of what jobs used: the sacct call and its reading (every side; standard library only).

One sacct of every user's jobs and their steps over the last days: the
allocation's line gives the user, account, partition, times, CPU time (the
sum of its steps) and what was allocated (AllocTRES: cpu, mem, gres/gpu,
gres/gpu:TYPE and gres/shard); the steps' lines give the peak memory (MaxRSS, measured per
step by jobacct_gather).  GPUs appear in AllocTRES only where slurm.conf has
`AccountingStorageTRES=gres/gpu`, their types only where it names each
(`gres/gpu:a100`).  Pure; tested by equality.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .slurmgres import gpus_held
from .slurmvocab import JOB_ID, TIMESTAMP
from .usage import JobUse

USAGE_FIELDS = (
    "JobID",
    "User",
    "Partition",
    "State",
    "Start",
    "End",
    "ElapsedRaw",
    "TotalCPU",
    "AllocTRES",
    "MaxRSS",
    "Account",
)
_TYPED_GPUS = "gres/gpu:"
_STEP = re.compile(rf"({JOB_ID})\.[A-Za-z0-9_+-]+")
_TIMESTAMP = re.compile(TIMESTAMP)
_SIZE_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024**3}


@dataclass(frozen=True)
class UsedJob:
    """One job as Slurm's accounting measured it."""

    job_id: str
    user: str
    partition: str
    state: str
    start: str  # ISO timestamps, "" when it has none
    end: str
    elapsed_seconds: int
    cpu_seconds: float
    cpus: int
    gpus: int
    memory_mib: int  # allocated
    memory_peak_mib: int  # the largest MaxRSS of its steps
    account: str = ""  # the Slurm account charged
    gpu_type: str = ""  # the GPUs' type where the accounting tracks types ("a100"; "a100+v100" for several), else ""
    shards: int = 0  # shares of a GPU (gres/shard), where the accounting tracks them
    shards_per_gpu: int = 0  # the admin's slurm.shards.per_gpu: what a share is of a GPU

    @property
    def gpu_share(self) -> float:
        """The GPUs it held, a share as its fraction of a GPU (2 shards of 4 a GPU: 0.5; a whole GPU where the
        admin's setting says no fraction, as the GPU cap counts it: slurmgres.gpu_fraction)."""
        return gpus_held(self.gpus, self.shards, self.shards_per_gpu)

    @property
    def gpu_hours(self) -> float:
        return self.gpu_share * self.elapsed_seconds / 3600

    @property
    def cpu_efficiency(self) -> int | None:
        return (
            round(100 * self.cpu_seconds / (self.cpus * self.elapsed_seconds))
            if self.cpus and self.elapsed_seconds
            else None
        )

    def use(self) -> JobUse:
        return JobUse(
            cpu_seconds=self.cpu_seconds,
            cpus=self.cpus,
            elapsed_seconds=self.elapsed_seconds,
            memory_peak_mib=self.memory_peak_mib,
            memory_mib=self.memory_mib,
            gpus=self.gpus,
        )


def usage_argv(sacct: str, days: int) -> list[str]:
    """Every user's jobs of the last `days` days with their steps (no --allocations: MaxRSS is the steps')."""
    return [
        sacct,
        "--allusers",
        "--noheader",
        "--parsable2",
        f"--starttime=now-{days}days",
        "--format=" + ",".join(USAGE_FIELDS),
    ]


def cpu_seconds(text: str) -> float:
    """sacct's TotalCPU: '[D-][HH:]MM:SS[.mmm]' -> seconds; anything else 0."""
    match = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.(\d+))?", text.strip())
    if not match:
        return 0.0
    days, hours, minutes, seconds, fraction = match.groups()
    total = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    return round(total + (int(fraction) / 10 ** len(fraction) if fraction else 0.0), 3)


def size_mib(text: str) -> int:
    """sacct's sizes: '149820K', '48G', '1.5T', '0' (bytes when no unit) -> MiB."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)", text.strip())
    if not match:
        return 0
    number, unit = float(match.group(1)), match.group(2)
    return round(number * _SIZE_UNITS[unit]) if unit else round(number / (1024 * 1024))


def tres(text: str) -> dict[str, str]:
    """'billing=8,cpu=8,gres/gpu=1,mem=48G,node=1' -> {'cpu': '8', 'gres/gpu': '1', ...}."""
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def gpu_types(given: dict[str, str]) -> str:
    """The GPU types of an allocation's TRES ({'gres/gpu:a100': '2', ...}): 'a100', 'a100+v100', or ''."""
    return "+".join(
        sorted(k.removeprefix(_TYPED_GPUS) for k, v in given.items() if k.startswith(_TYPED_GPUS) and _count(v))
    )


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0


def parse_usage(output: str, shards_per_gpu: int = 0) -> list[UsedJob]:
    """usage_argv's answer -> one UsedJob per allocation, its steps' peak memory folded in; unreadable lines
    and steps of jobs not listed are left out.  `shards_per_gpu`: what a share (gres/shard) is of a GPU."""
    jobs: dict[str, dict] = {}
    peaks: dict[str, int] = {}
    for line in output.splitlines():
        parts = line.rstrip("\n").split("|")
        if len(parts) != len(USAGE_FIELDS):
            continue
        job_id, user, partition, state, start, end, elapsed, total_cpu, alloc, max_rss, account = parts
        step = _STEP.fullmatch(job_id)
        if step:
            peaks[step.group(1)] = max(peaks.get(step.group(1), 0), size_mib(max_rss))
            continue
        if not re.fullmatch(JOB_ID, job_id) or not user or not state:
            continue
        given = tres(alloc)
        jobs[job_id] = {
            "job_id": job_id,
            "user": user,
            "partition": partition.split(",")[0],
            "state": state.split()[0],
            "start": start if _TIMESTAMP.fullmatch(start) else "",
            "end": end if _TIMESTAMP.fullmatch(end) else "",
            "elapsed_seconds": _count(elapsed),
            "cpu_seconds": cpu_seconds(total_cpu),
            "cpus": _count(given.get("cpu", "")),
            "gpus": _count(given.get("gres/gpu", "")),
            "memory_mib": size_mib(given.get("mem", "")),
            "memory_peak_mib": size_mib(max_rss),
            "account": account,
            "gpu_type": gpu_types(given),
            "shards": _count(given.get("gres/shard", "")),
            "shards_per_gpu": shards_per_gpu,
        }
    return [
        UsedJob(**{**job, "memory_peak_mib": max(job["memory_peak_mib"], peaks.get(job_id, 0))})
        for job_id, job in jobs.items()
    ]

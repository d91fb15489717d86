"""The admin YAML's section runs: notebooks and scripts run as Slurm jobs of their own (0.1 called it jobs:)."""

from __future__ import annotations

from .kinds import Flag, StorageName, integer, number
from .section import Section, key, section


class SweepSettings(Section):
    """Sweeps: a notebook's parameter grid run as one Slurm job array."""

    enabled: Flag = key(True, "Users may run a notebook over a grid of parameters as one Slurm job array.")
    max_tasks: integer(1, 100_000) = key(
        1000,
        "Most tasks (grid points) one sweep may have; keep it below Slurm's MaxArraySize (default 1001), "
        "which refuses bigger arrays itself.",
    )
    max_gpu_hours: number(0, 1_000_000) = key(
        200,
        "Most GPU-hours one sweep may ask for: tasks x nodes x GPUs x hours (its time limit, the most it can "
        "cost). Slurm's own limits (associations, QOS) apply too.",
    )
    max_at_once: integer(1, 10_000) = key(
        8, "Most tasks of one sweep running at once (Slurm's %N); a user may choose fewer, this is the default."
    )


class RunSettings(Section):
    """Notebooks and scripts run as Slurm jobs of their own (JupyterLab's "Run as a job", the REST API)."""

    enabled: Flag = key(True, "Users may run notebooks and scripts as Slurm jobs from the portal.")
    default_hours: number(0, 8760) = key(1, "Job length preselected in JupyterLab's dialog, in hours.")
    max_hours: number(0, 8760) = key(
        24, "Longest job a user may ask for, in hours (the partition's MaxTime applies too)."
    )
    output_folder: StorageName = key(
        "jobs", "Folder in the user's home where each job's output notebook is written (created by the job)."
    )
    max_notebook_mib: integer(1, 1024) = key(
        20, "Largest notebook or script the portal reads to submit (MiB); bigger ones are refused with words."
    )
    list_seconds: integer(2, 3600) = key(
        10,
        "Seconds one listing of every user's jobs (one squeue) is reused for everyone; Slurm calls then do not "
        "grow with the number of users or jobs.",
    )
    accounting_seconds: integer(5, 3600) = key(
        30, "Seconds one answer of Slurm's accounting (one sacct of every user's recent jobs) is reused."
    )
    history_days: integer(1, 365) = key(7, "Days of finished jobs shown in the jobs panel and on the home page.")
    keep: integer(1, 500) = key(50, "Jobs per user whose settings the hub remembers (for 'run again').")
    sweeps: SweepSettings = section(SweepSettings, "Sweeps: a notebook's parameter grid as one Slurm job array.")

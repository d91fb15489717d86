"""The admin YAML's section usage: what sessions used, the usage pages and the admins' status page."""

from __future__ import annotations

from .kinds import OptionalAbsPath, OptionalHttpUrl, integer, number
from .section import Section, key


class UsageSettings(Section):
    """What sessions used (the history's summaries, the usage page) and the admins' status page."""

    sample_seconds: integer(2, 600) = key(
        30, "Seconds between a session's readings of its GPUs (NVML), its processes' CPU time and memory."
    )
    report_seconds: integer(2, 3600) = key(
        60,
        "Seconds between a session's reports of what it used to the hub; the last report before the end makes "
        "the ended session's summary.",
    )
    accounting_seconds: integer(2, 3600) = key(
        120,
        "Seconds one answer of Slurm's accounting with jobs' CPU time and memory (one sacct of every user's jobs "
        "of `days` days) is reused by the usage pages and the summaries.",
    )
    days: integer(7, 366) = key(31, "Days of Slurm's accounting the usage page reads (GPU-hours this week and month).")
    cluster_seconds: integer(2, 3600) = key(
        30,
        "Seconds between the hub's readings of the cluster for its metrics (GPUs per partition, the queue and "
        "its waits): one sinfo and one squeue, shared with the pages.",
    )
    prometheus_url: OptionalHttpUrl = key(
        "",
        "The Prometheus that scrapes the hub's /hub/metrics; the admins' status page reads it. "
        "Empty = the page says there is no Prometheus.",
        example="http://127.0.0.1:9090",
    )
    prometheus_timeout: number(0, 60) = key(5, "Seconds the status page waits for Prometheus's answers.")
    scraper_token_file: OptionalAbsPath = key(
        "",
        "File (mode 0600, the hub's account) holding the API token Prometheus scrapes /hub/metrics with; the hub "
        "registers it as the service `prometheus`, which may read metrics and nothing else. Empty = none.",
    )

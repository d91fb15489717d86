"""The portal's Prometheus metrics, served with JupyterHub's own at /hub/metrics (hub side).

JupyterHub registers its metrics in prometheus_client's default registry and
serves that registry at /hub/metrics (scope read:metrics); the portal's join
it.  Sessions and GPUs are counted at scrape time from the spawners the hub
holds (no Slurm call); command durations and failures are recorded as
commands run.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

SLURM_SECONDS = Histogram(
    "dsportal_slurm_command_seconds",
    "Duration of Slurm commands the hub runs",
    ["command"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
SLURM_FAILURES = Counter(
    "dsportal_slurm_command_failures_total",
    "Slurm commands that failed (refused) or did not answer (unavailable)",
    ["command", "kind"],
)
START_SECONDS = Histogram(
    "dsportal_session_start_seconds",
    "From sbatch to JupyterLab answering, per partition",
    ["partition"],
    buckets=(2, 5, 10, 20, 30, 60, 120, 300, 900, 3600),
)
CULLED = Counter("dsportal_sessions_culled_total", "Sessions stopped for being idle, per partition", ["partition"])
CULLED_GPU_HOURS = Counter(
    "dsportal_culled_gpu_hours",
    "GPU-hours given back by idle culling: each culled session's GPUs times the time it had left, per partition",
    ["partition"],
)
# Per user: the admins' status page ranks heavy users by how much of their GPUs' time did work.  The hours are
# the hub's (spawner/hub/session/usagelog.py gpu_hours), topped up by Slurm's accounting; only the busy share is the
# session's own report, bounded by them.
USER_GPU_HOURS = Counter(
    "dsportal_user_gpu_hours",
    "GPU-hours of the user's ended portal sessions: the GPUs the hub gave times the time it saw each job run, "
    "raised to Slurm's accounting (GPUs x elapsed) where that counted more; never the session's own report",
    ["user"],
)
USER_GPU_BUSY_HOURS = Counter(
    "dsportal_user_gpu_busy_hours",
    "Self-reported: the user's GPU-hours weighted by each GPU's mean utilisation (NVML) as their sessions "
    "reported it; bounded by dsportal_user_gpu_hours (a session that reports nothing adds 0)",
    ["user"],
)

# The cluster as a whole, every user's jobs (spawner/hub/usage/clustermetrics.py), read every usage.cluster_seconds.
PARTITION_GPUS = Gauge(
    "dsportal_partition_gpus",
    "GPUs per partition: allocated, free (on nodes taking jobs) or down",
    ["partition", "state"],
)
QUEUE_PENDING = Gauge("dsportal_queue_pending_jobs", "Every user's pending jobs per partition", ["partition"])
JOB_WAIT = Histogram(
    "dsportal_job_wait_seconds",
    "From submission to start, of every user's jobs seen starting, per partition",
    ["partition"],
    buckets=(5, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200),
)


def count_user(name: str) -> None:
    """The user's GPU-hours series from their session's submission on, at 0: Prometheus's increase() counts
    nothing of a series whose first sample already holds a session's hours (the ranking would miss the first
    session of each user after a hub restart)."""
    USER_GPU_HOURS.labels(name)
    USER_GPU_BUSY_HOURS.labels(name)


def session_counts(cards: list[dict]) -> tuple[dict, dict]:
    """Session cards (spawner/hub/home/dashboard.py) -> ({(partition, state): n}, {partition: GPUs of running sessions})."""
    sessions: dict[tuple[str, str], int] = {}
    gpus: dict[str, float] = {}
    for card in cards:
        if card.get("state", "none") == "none":
            continue
        partition = card.get("partition", "")
        key = (partition, card["state"])
        sessions[key] = sessions.get(key, 0) + 1
        if card["state"] == "running":
            # a share of a GPU as its fraction (the card's gpu_share), else the whole GPUs
            gpus[partition] = gpus.get(partition, 0) + float(card.get("gpu_share", card.get("gpus", 0)))
    return sessions, gpus


class SessionCollector:
    """Sessions per partition and state, and GPUs the portal's running sessions hold, at scrape time."""

    def __init__(self, cards):
        self.cards = cards  # () -> the session cards of every spawner the hub holds

    def describe(self):
        # registering asks for the names; without describe() prometheus_client would
        # collect() then, while the hub is still loading its config
        yield GaugeMetricFamily("dsportal_sessions", "", labels=["partition", "state"])
        yield GaugeMetricFamily("dsportal_gpus_allocated", "", labels=["partition"])

    def collect(self):
        sessions, gpus = session_counts(self.cards())
        family = GaugeMetricFamily(
            "dsportal_sessions", "Portal sessions per partition and state", labels=["partition", "state"]
        )
        for (partition, state), count in sorted(sessions.items()):
            family.add_metric([partition, state], count)
        yield family
        family = GaugeMetricFamily(
            "dsportal_gpus_allocated", "GPUs held by the portal's running sessions", labels=["partition"]
        )
        for partition, count in sorted(gpus.items()):
            family.add_metric([partition], count)
        yield family


_registered: list[SessionCollector] = []


def register_session_collector(cards) -> None:
    """Once per process (the hub); `cards()` -> the session cards of every spawner the hub holds."""
    if not _registered:
        _registered.append(SessionCollector(cards))
        REGISTRY.register(_registered[0])

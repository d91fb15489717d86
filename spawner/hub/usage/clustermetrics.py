"""The cluster as a whole for Prometheus: GPUs per partition, the queue and how long jobs wait (hub side).

Every `usage.cluster_seconds` the hub reads the shared sinfo
(spawner/hub/slurm/clusterinfo.py) and the shared squeue of every user's jobs
(spawner/hub/slurm/joblisting.py), which the pages use too, and sets gauges that
/hub/metrics serves (spawner/hub/base/metrics.py).  A job seen running for the
first time, that started within the last RECENT_SECONDS, adds its wait
(submission to start) to a histogram: the status page's p50/p90 come from
it.  Older starts (what a restarted hub finds running) are not counted
again; a job that starts and ends between two readings is not seen.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from ...slurmvocab import ListedJob, NodeState
from ..base.metrics import (
    CULLED_GPU_HOURS,
    JOB_WAIT,
    PARTITION_GPUS,
    QUEUE_PENDING,
    USER_GPU_BUSY_HOURS,
    USER_GPU_HOURS,
)
from ..slurm.client import SlurmError

log = logging.getLogger("JupyterHub").getChild("usage")
GPU_STATES = ("allocated", "free", "down")
RECENT_SECONDS = 600


def partition_gpus(nodes: list[NodeState], partitions: list[str]) -> dict[tuple[str, str], int]:
    """{(partition, allocated|free|down): GPUs} for each partition named (pure); a node in two partitions
    counts in both, as sinfo lists it."""
    counts = {(p, state): 0 for p in partitions for state in GPU_STATES}
    for node in nodes:
        if node.partition not in partitions:
            continue
        counts[(node.partition, "allocated")] += node.gpus_used
        idle = max(node.gpus - node.gpus_used, 0)
        counts[(node.partition, "free" if node.usable else "down")] += idle
    return counts


def pending_jobs(jobs: list[ListedJob], partitions: list[str]) -> dict[str, int]:
    """Pending jobs per partition (pure); a job pending in several partitions counts in its first."""
    counts = dict.fromkeys(partitions, 0)
    for job in jobs:
        partition = job.partition.split(",")[0]
        if job.state == "PENDING" and partition in counts:
            counts[partition] += 1
    return counts


def new_waits(jobs: list[ListedJob], seen: set[str], now: datetime) -> tuple[list[tuple[str, float]], set[str]]:
    """([(partition, seconds waited)] of jobs seen running for the first time that started lately, the running
    jobs' ids to remember) (pure)."""
    waits, running = [], set()
    for job in jobs:
        if job.state != "RUNNING" or not job.start or not job.submitted:
            continue
        running.add(job.job_id)
        if job.job_id in seen:
            continue
        start, submitted = datetime.fromisoformat(job.start), datetime.fromisoformat(job.submitted)
        if (now - start).total_seconds() <= RECENT_SECONDS:
            waits.append((job.partition.split(",")[0], max(0.0, (start - submitted).total_seconds())))
    return waits, running


def zero_series(partitions: list[str], users: set[str]) -> None:
    """Make the counters' series that may grow soon exist at 0: Prometheus's increase() counts nothing for a
    series whose first scrape already shows its first increment (a session's end, a culled session)."""
    for partition in partitions:
        CULLED_GPU_HOURS.labels(partition)
        JOB_WAIT.labels(partition)
    for user in users:
        USER_GPU_HOURS.labels(user)
        USER_GPU_BUSY_HOURS.labels(user)


class ClusterReader:
    def __init__(self, services, spawners):
        self.services = services  # spawner/hub/slurm/services.py: the shared sinfo and squeue
        self.spawners = spawners  # () -> the hub's portal spawners
        self.seen: set[str] = set()  # the running jobs of the last reading

    async def read_once(self) -> None:
        partitions = [p.name for p in self.services.settings.slurm.partitions]
        zero_series(partitions, {s.user.name for s in self.spawners() if s.job_id})
        nodes = await self.services.cluster.nodes()
        for (partition, state), count in partition_gpus(nodes, partitions).items():
            PARTITION_GPUS.labels(partition, state).set(count)
        jobs = [job for listed in (await self.services.listing.queued()).values() for job in listed]
        for partition, count in pending_jobs(jobs, partitions).items():
            QUEUE_PENDING.labels(partition).set(count)
        waits, self.seen = new_waits(jobs, self.seen, datetime.now())
        for partition, seconds in waits:
            JOB_WAIT.labels(partition).observe(seconds)

    async def run(self, seconds: float) -> None:
        while True:
            try:
                await self.read_once()
            except SlurmError as e:
                log.warning("Reading the cluster for the metrics: %s", e)
            except Exception:  # noqa: BLE001 - one failed reading must not end the loop
                log.exception("Reading the cluster for the metrics failed")
            await asyncio.sleep(seconds)

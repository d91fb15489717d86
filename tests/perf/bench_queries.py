"""Benchmark: Slurm commands per minute run by the hub, by users viewing the form and sessions waiting.

The hub's real code paths (HubServices, the spawner's start loop and progress
stream, the shared watcher) against the mock Slurm: 20 sessions wait in the
queue (reason Resources; counted from 10 s after their submission) while 1, 10 and 100 users look at the options form,
each refreshing what is free every second and, every 5 s, asking a start estimate, the alternatives of a shape
(of a GPU type: V100 or A100 nodes, or any type) and their accounts, as the page would if they kept changing their
choice.  Prints the number of sinfo, squeue, `sbatch --test-only`, sacctmgr and sshare calls per minute, and how
long the alternatives took to appear (p50/p99); asserts nothing.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_queries [--seconds 20]     (from the repository's root)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from pathlib import Path

import yaml

from spawner.hub.session.start import QUICK_START_SECONDS
from spawner.hub.slurm.alternatives import alternatives
from spawner.hub.slurm.services import HubServices
from tests.perf.stats import ms
from tests.support.mockslurm import MockSlurm, config_data, spawner_for

PENDING_SESSIONS = 20
FULL = [  # two GPU types, every GPU taken
    ["gpu01", "sxm2", "alloc", "v100:4", "v100:4", 8, 40, 393216, 196608],
    ["gpu02", "sxm2", "alloc", "a100:4", "a100:4", 8, 40, 393216, 196608],
]
TYPES = ("v100", "a100", "")


async def viewer(services: HubServices, name: str, gpus: int, gpu_type: str, waits: list[float]) -> None:
    tick = 0
    shape = {"partition": "sxm2", "gpus": str(gpus), "hours": "8", **({"gpu_type": gpu_type} if gpu_type else {})}
    while True:
        with contextlib.suppress(Exception):
            await services.cluster.nodes()
            if tick % 5 == 0:  # every 5 s (the loop runs every second; the form asks on changes, debounced)
                await services.accounts()
                await services.estimate(name, shape)
                began = time.monotonic()
                await alternatives(services, name, shape)
                waits.append(time.monotonic() - began)
        tick += 1
        await asyncio.sleep(1)


async def waiting_session(spawner) -> None:
    spawner.apply_session_options({"gpus": 4, "hours": 8})
    starting = asyncio.ensure_future(spawner.start())
    events = spawner.progress()
    try:
        while not starting.done():
            await events.__anext__()  # the progress page is open for every waiting session
    finally:
        starting.cancel()


def count(mock: MockSlurm) -> dict[str, int]:
    calls = mock.calls()
    return {
        "sinfo": sum(c["cmd"] == "sinfo" for c in calls),
        "squeue": sum(c["cmd"] == "squeue" for c in calls),
        "sbatch --test-only": sum(c["cmd"] == "sbatch" and any(a == "--test-only" for a in c["argv"]) for c in calls),
        "sacctmgr": sum(c["cmd"] == "sacctmgr" for c in calls),
        "sshare": sum(c["cmd"] == "sshare" for c in calls),
    }


async def scenario(viewers: int, seconds: float) -> tuple[dict[str, float], list[float]]:
    root = Path(tempfile.mkdtemp(prefix="dsportal-bench-"))
    mock = MockSlurm(root / "mockslurm")
    mock.set_nodes(FULL)
    data = config_data(mock)
    data["slurm"]["partitions"][0]["max_gpus"] = 4
    config = root / "portal.yaml"
    config.write_text(yaml.safe_dump(data))
    services = HubServices(str(config))
    import spawner.hub.slurm.services as registry

    registry._services[str(config)] = services  # the spawners share this one, as in the hub
    home = root / "home"
    home.mkdir()
    sessions = [spawner_for(f"user{i:03d}", config, home) for i in range(PENDING_SESSIONS)]
    tasks = [asyncio.ensure_future(waiting_session(s)) for s in sessions]
    while len(mock.jobs()) < PENDING_SESSIONS:
        await asyncio.sleep(0.1)
    for job_id in mock.jobs():
        mock.set_job(job_id, reason="Resources")
    await asyncio.sleep(QUICK_START_SECONDS)  # past their first seconds: the steady state of a queue
    before = count(mock)
    # viewers ask as the demo accounts (an estimate is asked as a real account); the answer is per shape
    waits: list[float] = []
    tasks += [
        asyncio.ensure_future(viewer(services, ("alice", "bob", "carol")[i % 3], 1 + i % 4, TYPES[i % 3], waits))
        for i in range(viewers)
    ]
    await asyncio.sleep(seconds)
    after = count(mock)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {cmd: (after[cmd] - before[cmd]) * 60 / seconds for cmd in after}, waits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    for viewers in (1, 10, 100):
        rates, waits = asyncio.run(scenario(viewers, args.seconds))
        shown = "  ".join(f"{cmd} {rate:5.1f}/min" for cmd, rate in rates.items())
        print(f"bench slurm calls, {PENDING_SESSIONS} sessions queued, {viewers:3d} users on the form: {shown}")
        print(
            f"bench alternatives appear, {viewers:3d} users on the form ({len(waits)} asked): "
            f"p50 {ms(waits, 50)}  p99 {ms(waits, 99)}"
        )


if __name__ == "__main__":
    main()

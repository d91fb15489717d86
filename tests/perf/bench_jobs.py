"""Benchmark: jobs run from the portal (runs).  Prints numbers; asserts nothing.

1. Slurm calls per minute for the jobs panels: the hub's real code (HubServices'
   shared listing, runs/service.jobs building each user's rows) against the mock
   Slurm holding 200 jobs of 100 users (100 pending, 100 running), with 1, 10 and
   100 users' panels open, each asking every second (ten times JupyterLab's pace,
   so a minute's worth of sharing shows in seconds).
2. Submit-to-running on the idle dev cluster (`--submit N`): alice's notebook job through the hub's REST
   API, timed until Slurm lists it RUNNING and until its log says it finished.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_jobs [--seconds 20] [--submit 5]   (from the repository's root)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import yaml

from spawner.hub.runs import service
from spawner.hub.session.userrecord import UserRecord
from spawner.hub.slurm.services import HubServices
from tests.support.mockslurm import MockSlurm, config_data

USERS = 100
JOBS = 200


def seeded(root: Path) -> tuple[MockSlurm, HubServices]:
    mock = MockSlurm(root / "mockslurm")
    data = config_data(mock)
    data["runs"] = {"list_seconds": 10, "accounting_seconds": 30}
    config = root / "portal.yaml"
    config.write_text(yaml.safe_dump(data))
    with_jobs = {
        str(100 + i): {
            "user": f"user{i % USERS:03d}",
            "name": f"train-{i}.ipynb",
            "state": "PENDING" if i % 2 else "RUNNING",
            "reason": "Priority" if i % 2 else "None",
            "node": "" if i % 2 else "gpu01",
            "options": {"partition": "sxm2", "nodes": "1", "time": "01:00:00"},
        }
        for i in range(JOBS)
    }
    import json

    (mock.state / "jobs.json").write_text(json.dumps({"next_id": 100 + JOBS, "jobs": with_jobs}))
    return mock, HubServices(str(config))


async def panel(services: HubServices, name: str) -> None:
    async def checked(account) -> None:  # the directory's check: the demo users have no directory here
        return None

    row = int(name.removeprefix("user"))  # each user a row of their own
    user = SimpleNamespace(name=name, orm_user=SimpleNamespace(id=row, name=name, created=""))
    services.shared(("user records",), dict)[(row, "")] = UserRecord()  # none of the portal's runs
    spawner = SimpleNamespace(
        user=user,
        services=services,
        job_id="",
        unix_account=lambda: SimpleNamespace(name=name, home=f"/home/{name}"),
        check_directory_account=checked,
    )
    while True:
        with contextlib.suppress(Exception):
            await service.jobs(services, spawner)
        await asyncio.sleep(1)


def count(mock: MockSlurm) -> dict[str, int]:
    calls = mock.calls()
    return {cmd: sum(c["cmd"] == cmd for c in calls) for cmd in ("squeue", "sacct")}


async def panels(open_panels: int, seconds: float) -> dict[str, float]:
    mock, services = seeded(Path(tempfile.mkdtemp(prefix="dsportal-bench-")))
    tasks = [asyncio.ensure_future(panel(services, f"user{i % USERS:03d}")) for i in range(open_panels)]
    await asyncio.sleep(1)  # the first answers in: from here on, the steady state
    before, started = count(mock), time.monotonic()
    await asyncio.sleep(seconds)
    after, elapsed = count(mock), time.monotonic() - started
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {cmd: (after[cmd] - before[cmd]) * 60 / elapsed for cmd in after}


def submit_to_running(runs: int) -> None:
    """alice's tiny notebook job on the idle dev cluster: seconds until RUNNING and until done."""
    from tests.support.jobs import JobsClient

    client = JobsClient.for_user("alice")
    client.put_notebook("bench/quick.ipynb", ["print('hello')"])
    running, done = [], []
    for _ in range(runs):
        asked = time.monotonic()
        job_id = client.submit({"path": "bench/quick.ipynb", "hours": 0.25})["job_id"]
        client.wait_state(job_id, {"RUNNING", "COMPLETING", "COMPLETED"}, 60)
        running.append(time.monotonic() - asked)
        client.wait_log(job_id, "dsportal-run: done", 120)
        done.append(time.monotonic() - asked)
    print(
        f"bench run submit-to-running, idle cluster, {runs} runs: median {statistics.median(running):.2f} s "
        f"(min {min(running):.2f}, max {max(running):.2f}); to the notebook done: median {statistics.median(done):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--submit", type=int, default=0, help="runs timed on the dev cluster (0: skip)")
    args = parser.parse_args()
    for open_panels in (1, 10, 100):
        rates = asyncio.run(panels(open_panels, args.seconds))
        shown = "  ".join(f"{cmd} {rate:5.1f}/min" for cmd, rate in rates.items())
        print(
            f"bench jobs panels, {JOBS} jobs of {USERS} users, {open_panels:3d} panels open (1 request/s each): {shown}"
        )
    if args.submit:
        submit_to_running(args.submit)


if __name__ == "__main__":
    main()

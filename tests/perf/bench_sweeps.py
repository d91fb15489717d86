"""Benchmark: sweeps (a notebook's grid as one Slurm job array) in the jobs panel.  Prints numbers; asserts nothing.

1. Slurm calls per minute with a 1,000-task sweep: the hub's real code (runs/service.submit sends alice's sweep
   to the mock Slurm as one `sbatch --array=0-999%8`; HubServices' shared listing; runs/service.jobs and
   service.tasks build her rows and her sweep's table) against the mock Slurm holding the sweep (8 tasks
   running, 200 completed with their results files, the rest waiting in one squeue line) beside 200 jobs of
   100 other users, with 1, 10 and 100 users' panels open, each asking every second (alice's also for her
   sweep's table).  The same without the sweep beside it: squeue and sacct per minute must not move.  Also the
   time to build alice's rows and her table (median, p95; the mock's sudo is a Python process, its start is
   printed apart) and the `head` commands per table (one for 1,000 tasks).
2. On the dev cluster (`--real N`): alice's N-task sweep of a tiny notebook (partition cpu, 8 at once) through
   the hub's REST API; GET jobs and GET jobs/ID/tasks timed before it, while it runs and after it ended, the
   hub's Slurm commands per minute from its /hub/metrics (every command the hub ran, not only the panels'),
   and the sweep's submit-to-all-ended time.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_sweeps [--seconds 20] [--real 50]   (from the repository's root)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from spawner.contract import sweep_results
from spawner.hub.runs import service
from spawner.hub.slurm.services import HubServices
from tests.perf import bench_jobs
from tests.perf.stats import percentile
from tests.support.jobs import notebook_text
from tests.support.mockslurm import MockSlurm, spawner_for

ALICE = "alice"
TASKS = 1000
AT_ONCE = 8
RUNNING = 8
COMPLETED = 200
PARAMETERS = "lr = 0.1  # learning rate\nseed = 0\n"
RESULTS = "results = {'score': lr * 10 + seed, 'seed_was': seed}"
COMMANDS = ("squeue", "sacct", "head")


# --- pure parts (tests/unit/test_perf_sweeps.py) ------------------------------------------
def sweep_notebook() -> str:
    """A tiny notebook whose last cell (tagged "results") records `score`."""
    notebook = json.loads(notebook_text([RESULTS], PARAMETERS))
    notebook["cells"][-1]["metadata"]["tags"] = ["results"]
    return json.dumps(notebook)


def sweep_options(path: str, tasks: int, partition: str, at_once: int = AT_ONCE) -> dict:
    """The run request of a `tasks`-task sweep over `seed` (as JupyterLab's dialog sends it)."""
    grid = {"seed": {"values": list(range(tasks))}, "lr": {"value": 0.1}}
    return {"path": path, "partition": partition, "hours": 0.25, "sweep": {"grid": grid, "at_once": at_once}}


def task_fields(running: int, completed: int) -> dict[int, dict]:
    """The mock's started tasks: the first `completed` ended well, the next `running` run."""
    done = {"state": "COMPLETED", "reason": "None", "node": "gpu01", "start": "2026-11-22T08:00:00"}
    now = {"state": "RUNNING", "reason": "None", "node": "gpu02", "start": "2026-11-22T08:30:00"}
    return {t: dict(done if t < completed else now) for t in range(completed + running)}


def heads(calls: list[dict]) -> int:
    """The `head` commands among the mock's calls (run as a user through its sudo)."""
    return sum(c["cmd"] == "sudo" and c["argv"][:1] == ["head"] for c in calls)


def counted(calls: list[dict]) -> dict[str, int]:
    """squeue, sacct and head commands among the mock's calls."""
    found = {cmd: sum(c["cmd"] == cmd for c in calls) for cmd in COMMANDS[:2]}
    return {**found, "head": heads(calls)}


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Commands run between two counts, by command."""
    return {cmd: after.get(cmd, 0) - before.get(cmd, 0) for cmd in COMMANDS}


def timing(values: list[float]) -> str:
    """'median 12.0 ms, p95 30.5 ms (40 calls)'; 'no calls' for none."""
    if not values:
        return "no calls"
    return (
        f"median {percentile(values, 50) * 1000:.1f} ms, p95 {percentile(values, 95) * 1000:.1f} ms "
        f"({len(values)} calls)"
    )


def calls_words(calls: dict[str, float] | None, seconds: float) -> str:
    """'squeue 3 (9.0/min), sacct 1 (3.0/min), head 18 (54.0/min)': commands run in `seconds`, and per minute."""
    if calls is None:
        return "not counted (the hub's /hub/metrics did not answer)"
    rate = 60 / seconds if seconds > 0 else 0
    return ", ".join(f"{cmd} {calls.get(cmd, 0):.0f} ({calls.get(cmd, 0) * rate:.1f}/min)" for cmd in COMMANDS)


_METRIC = re.compile(r'^dsportal_slurm_command_seconds_count\{command="([^"]+)"\} ([0-9.e+]+)$', re.MULTILINE)


def slurm_counts(metrics: str) -> dict[str, float]:
    """The hub's Slurm commands run so far, by command, from its Prometheus text (dsportal_slurm_command_seconds)."""
    return {cmd: float(n) for cmd, n in _METRIC.findall(metrics)}


# --- 1. the mock Slurm -----------------------------------------------------------------------
@dataclass
class Rig:
    mock: MockSlurm
    services: HubServices
    alice: object  # her SlurmGPUSpawner (its record holds the sweep)
    job_id: str = ""  # the sweep's; "" without one
    rows: list[float] = field(default_factory=list)  # seconds per jobs() of alice's, from the window's start
    tables: list[float] = field(default_factory=list)  # seconds per tasks()
    failures: list[str] = field(default_factory=list)
    measuring: bool = False


def alice_spawner(root: Path, home: Path) -> object:
    """alice's real spawner outside a hub; her session's record is saved nowhere, her own (the sweep) in the
    in-memory database spawner_for gives her user."""
    alice = spawner_for(ALICE, root / "portal.yaml", home)
    alice.orm_spawner = SimpleNamespace(state=None, server=None, name="")
    alice.db = SimpleNamespace(commit=lambda: None)
    return alice


async def seeded(root: Path, with_sweep: bool) -> Rig:
    """bench_jobs' 200 jobs of 100 users, and alice's 1,000-task sweep submitted through service.submit."""
    mock, services = bench_jobs.seeded(root)
    home = root / "home" / ALICE
    (home / "bench").mkdir(parents=True)
    (home / "bench" / "sweep.ipynb").write_text(sweep_notebook())
    rig = Rig(mock, services, alice_spawner(root, home))
    if not with_sweep:
        return rig
    run = await service.submit(services, rig.alice, sweep_options("bench/sweep.ipynb", TASKS, "sxm2"))
    rig.job_id = run["job_id"]
    mock.set_job(rig.job_id, reason="JobArrayTaskLimit")  # Slurm's word for the tasks held back by %8
    mock.set_tasks(rig.job_id, task_fields(RUNNING, COMPLETED))
    folder = home / run["output"]
    folder.mkdir(parents=True)
    for task in range(COMPLETED):  # the one JSON line each task's results cell writes (contract.sweep_results)
        line = {"task": task, "results": {"score": 1.0 + task, "seed_was": task}}  # lr * 10 + seed
        Path(sweep_results(str(folder), task)).write_text(json.dumps(line) + "\n")
    return rig


async def alice_panel(rig: Rig) -> None:
    """alice's panel every second, with her sweep's table open when she has one; timed once measuring."""
    while True:
        for what, call, times in (
            ("rows", lambda: service.jobs(rig.services, rig.alice), rig.rows),
            ("table", lambda: service.tasks(rig.services, rig.alice, rig.job_id), rig.tables),
        ):
            if what == "table" and not rig.job_id:
                continue
            started = time.monotonic()
            try:
                await call()
            except Exception as e:  # said in the output; the benchmark goes on
                rig.failures.append(f"{what}: {e!r}")
                continue
            if rig.measuring:
                times.append(time.monotonic() - started)
        await asyncio.sleep(1)


async def panels(open_panels: int, seconds: float, with_sweep: bool) -> tuple[dict[str, float], float, Rig]:
    """(Slurm commands run, in how many seconds) with `open_panels` panels (alice's first), and the rig with its
    timings."""
    with tempfile.TemporaryDirectory(prefix="dsportal-bench-") as root:
        rig = await seeded(Path(root), with_sweep)
        others = [f"user{i % bench_jobs.USERS:03d}" for i in range(open_panels - 1)]
        tasks = [asyncio.ensure_future(alice_panel(rig))]
        tasks += [asyncio.ensure_future(bench_jobs.panel(rig.services, name)) for name in others]
        await asyncio.sleep(1)  # the first answers in: from here on, the steady state
        before, started = counted(rig.mock.calls()), time.monotonic()
        rig.measuring = True
        await asyncio.sleep(seconds)
        rig.measuring = False
        after, elapsed = counted(rig.mock.calls()), time.monotonic() - started
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return delta(before, after), elapsed, rig


async def one_table() -> tuple[int, dict, float, object]:
    """One table of the 1,000-task sweep alone: (head commands it ran, the table, the mock sudo's own start, the
    jobs settings: the listing's cadence)."""
    with tempfile.TemporaryDirectory(prefix="dsportal-bench-") as root:
        rig = await seeded(Path(root), True)
        await service.jobs(rig.services, rig.alice)  # the shared listing in: the table reads files only
        before = heads(rig.mock.calls())
        table = await service.tasks(rig.services, rig.alice, rig.job_id)
        ran = heads(rig.mock.calls()) - before
        sudo = []
        for _ in range(5):
            started = time.monotonic()
            subprocess.run([rig.mock.path("sudo"), "-n", "-u", ALICE, "--", "true"], check=True, timeout=30)
            sudo.append(time.monotonic() - started)
    return ran, table, percentile(sudo, 50), rig.services.settings.runs


def mock_part(seconds: float) -> None:
    ran, table, sudo, cadence = asyncio.run(one_table())
    started = sum(t["state"] != "PENDING" for t in table["tasks"])
    with_results = sum(bool(t["results"]) for t in table["tasks"])
    print(
        f"bench sweeps: the shared listing asks squeue every {cadence.list_seconds} s and sacct every "
        f"{cadence.accounting_seconds} s at most (a shorter window may hold none)"
    )
    print(
        f"bench sweeps table, {TASKS}-task sweep ({started} started, {with_results} with results): "
        f"{ran} head command(s), {len(table['tasks'])} rows; the mock's sudo alone takes {sudo * 1000:.0f} ms"
    )
    for open_panels in (1, 10, 100):
        with_sweep, took, rig = asyncio.run(panels(open_panels, seconds, True))
        without, plain_took, plain = asyncio.run(panels(open_panels, seconds, False))
        print(
            f"bench sweeps panels, {bench_jobs.JOBS} jobs of {bench_jobs.USERS} users, {open_panels:3d} panels open "
            f"(1 request/s each), Slurm commands in {took:.0f} s: with alice's {TASKS}-task sweep "
            f"{calls_words(with_sweep, took)}; without it {calls_words(without, plain_took)}"
        )
        print(f"  alice's rows: {timing(rig.rows)} (without the sweep: {timing(plain.rows)})")
        print(f"  her sweep's table: {timing(rig.tables)}")
        for failure in sorted(set(rig.failures + plain.failures))[:5]:
            print(f"  failed: {failure}")


# --- 2. the dev cluster ------------------------------------------------------------------
@dataclass
class Phase:
    seconds: float = 0
    rows: list[float] = field(default_factory=list)
    tables: list[float] = field(default_factory=list)
    failures: int = 0
    calls: dict[str, float] | None = None  # the hub's Slurm commands run meanwhile; None: not counted
    ended: bool = False


def ended(row: dict | None) -> bool:
    """The sweep's row says how it ended (not while the hub still reads the results)."""
    return row is not None and not row["active"] and bool(row["why"]) and "reading" not in row["why"]


def hub_counts(admin) -> dict[str, float] | None:
    with contextlib.suppress(OSError):
        status, text = admin.request("GET", "/hub/metrics", timeout=30)
        if status == 200 and isinstance(text, str):
            return slurm_counts(text)
    return None


def timed(client, path: str, times: list[float]) -> dict | None:
    """GET path's answer (its time into `times`), None when it failed."""
    started = time.monotonic()
    try:
        status, answer = client.request("GET", path, timeout=60)
    except OSError:
        return None
    if status != 200:
        return None
    times.append(time.monotonic() - started)
    return answer


PACE = 1.5  # s between asks: her table's reads stay under the hub's 60 file reads a minute (handlers.READS_PER_MINUTE)


def watch(client, admin, job_id: str, seconds: float, until_ended: bool = False) -> Phase:
    """alice's panel (and her sweep's table) every PACE seconds for `seconds`, or until the sweep ended."""
    phase = Phase()
    before, started = hub_counts(admin), time.monotonic()
    while time.monotonic() - started < seconds and not (until_ended and phase.ended):
        tick = time.monotonic()
        answer = timed(client, "jobs", phase.rows)
        if answer is None:
            phase.failures += 1
        else:
            phase.ended = ended(next((r for r in answer["jobs"] if r["job_id"] == job_id), None))
        if job_id and timed(client, f"jobs/{job_id}/tasks", phase.tables) is None:
            phase.failures += 1
        time.sleep(max(0.0, PACE - (time.monotonic() - tick)))
    after, phase.seconds = hub_counts(admin), time.monotonic() - started
    phase.calls = delta(before, after) if before is not None and after is not None else None
    return phase


def show(what: str, phase: Phase) -> None:
    failed = f"; {phase.failures} requests failed" if phase.failures else ""
    print(f"  {what} ({phase.seconds:.0f} s): hub's Slurm commands {calls_words(phase.calls, phase.seconds)}{failed}")
    print(f"    GET jobs: {timing(phase.rows)}; GET jobs/ID/tasks: {timing(phase.tables)}")


def real_part(tasks: int, seconds: float, timeout: float) -> None:
    """alice's `tasks`-task sweep on the dev cluster, watched through the hub's REST API."""
    from tests.support.cluster import TOKEN_FILE, Cluster
    from tests.support.jobs import JobsClient

    client = JobsClient.for_user(ALICE)
    admin = Cluster(TOKEN_FILE.read_text().strip())
    client.write("bench/sweep.ipynb", sweep_notebook())
    before = watch(client, admin, "", seconds)
    asked = time.monotonic()
    job_id = client.submit(sweep_options("bench/sweep.ipynb", tasks, "cpu"))["job_id"]
    running = Phase()
    try:
        running = watch(client, admin, job_id, timeout, until_ended=True)
    finally:
        took = time.monotonic() - asked
        if not running.ended:  # the deadline passed, or the benchmark was stopped: its tasks go too
            with contextlib.suppress(OSError):
                client.request("POST", f"runs/{job_id}/cancel")
    after = watch(client, admin, job_id, seconds)
    print(f"bench sweeps on the dev cluster, alice's {tasks}-task sweep {job_id} (partition cpu, {AT_ONCE} at once):")
    show("before it, her panel alone", before)
    show("while it ran", running)
    show("after it ended, her panel and its table", after)
    ending = f"{took:.0f} s" if running.ended else f"not all ended within {timeout:.0f} s (cancelled)"
    print(f"  from the submit to her panel saying all {tasks} tasks ended: {ending}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=20, help="seconds each measurement runs (default 20)")
    parser.add_argument(
        "--real", type=int, default=0, metavar="TASKS", help="tasks of a sweep timed on the dev cluster (0: skip)"
    )
    parser.add_argument(
        "--real-timeout",
        type=float,
        default=900,
        metavar="SECONDS",
        help="seconds the dev cluster's sweep may take (default 900)",
    )
    args = parser.parse_args()
    mock_part(args.seconds)
    if args.real:
        real_part(args.real, args.seconds, args.real_timeout)


if __name__ == "__main__":
    main()

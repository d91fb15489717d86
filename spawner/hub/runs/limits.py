"""The admin's GPU cap across a user's sessions, runs and sweeps (hub side).

sessions.max_gpus_per_user counts every GPU a user holds or has queued through
the portal: their sessions' (spawner/hub/session/limits.py), their runs' and
their sweeps' (here).  A run holds its nodes × GPUs while Slurm queues or runs
it; a sweep, its tasks' GPUs × the tasks that may run at once (its `%N`, or
fewer when fewer are left).  The runs come from the user's record (what the
portal submitted) and their states from the shared listing (one squeue, one
sacct for everyone): a run the listing does not show yet, submitted since it
was taken, counts.

A submission that passed the cap counts from then on (`GpuClaims`, on the
hub's services) until its run is in the record: the check and the claim are
one step with no await between them, as a session's start is, so runs,
sweeps and sessions started at the same moment cannot pass the cap together.

Jobs a user submits with sbatch from a terminal are not the portal's to count:
Slurm's associations and QOS limits bound them (docs/admins/slurm.md), and
0-GPU runs and sweeps too (the cap counts GPUs only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from ...slurmgres import gpu_fraction
from ...slurmvocab import AccountedJob, ListedJob
from ..request.sessionlimits import Held, gpu_problem, user_sessions
from ..session.userrecord import record_of
from .sweepboard import IN_QUEUE, task_states
from .sweeps import SETTLE_LISTINGS, grouped

if TYPE_CHECKING:
    from ..slurm.services import HubServices
    from .grid import Sweep
    from .request import RunRequest

T = TypeVar("T")
log = logging.getLogger("JupyterHub").getChild("runs")


def task_gpus(settings: dict, per_gpu: int = 0) -> float:
    """The GPUs one run (or one task of a sweep) of these settings holds: nodes × GPUs per node, or its shares
    of one GPU as their fraction (`per_gpu`: the shares a GPU is cut into; a share counts as a whole GPU where
    none is said)."""
    shards = max(0, int(settings.get("shards", 0) or 0))
    if shards:
        return gpu_fraction(shards, per_gpu)
    return max(1, int(settings.get("nodes", 1) or 1)) * max(0, int(settings.get("gpus", 0) or 0))


def sweep_gpus(per_task: float, tasks: int, at_once: int) -> float:
    """A sweep's GPUs against the cap: its tasks' GPUs × the tasks that may run at once."""
    return per_task * max(0, min(tasks, at_once or tasks))


def _run_active(run: dict, listed: list[ListedJob], accounted: list[AccountedJob], settled: bool) -> bool:
    """Whether a plain run is queued or running: squeue's word; else, while a listing may predate it, unless
    Slurm's accounting says it has ended."""
    job_id = run["job_id"]
    in_squeue = next((j for j in listed if j.job_id == job_id), None)
    if in_squeue is not None:
        return in_squeue.state in IN_QUEUE
    if settled:
        return False
    ended = next((j for j in accounted if j.job_id == job_id and j.state not in IN_QUEUE), None)
    return ended is None


def runs_held(
    runs: list[dict],
    listed: list[ListedJob],
    accounted: list[AccountedJob],
    list_seconds: int,
    now: float,
    per_gpu: int = 0,
) -> list[Held]:
    """The user's runs and sweeps (their record's `runs`) that hold or wait for GPUs, as the cap counts them
    (`per_gpu`: the shares a GPU is cut into, for runs on shares)."""
    settle = max(30, SETTLE_LISTINGS * list_seconds)
    sweeps = {r["job_id"] for r in runs if r.get("sweep")}
    queued, done = grouped(listed, sweeps), grouped(accounted, sweeps)
    held = []
    for run in runs:
        per_task = task_gpus(run.get("settings", {}), per_gpu)
        if not per_task or not run.get("job_id"):
            continue
        settled = now - run.get("submitted_ts", 0) > settle
        if run.get("sweep"):
            job_id = run["job_id"]
            states = task_states(job_id, run["sweep"].get("tasks", 0), queued[job_id], done[job_id], settled)
            gpus = sweep_gpus(per_task, sum(s.active for s in states), run["sweep"].get("at_once", 0))
            if gpus:
                held.append(Held(job_id, gpus, kind="sweep"))
        elif _run_active(run, listed, accounted, settled):
            held.append(Held(run["job_id"], per_task, kind="run"))
    return held


def sessions_held(user) -> list[Held]:
    """Every session of the user that counts against the limits, with its GPUs (a run's check: no session of
    the user is the one asking)."""
    held = []
    for session in user_sessions(user):
        if session.counts_against_limits():
            resources = session.current_resources()
            held.append(Held(session.name, resources.gpu_share if resources else 0))
    return held


async def user_runs_listing(services: HubServices, username: str, fresh: bool = False) -> tuple[list, list]:
    """The user's jobs in the shared listing (listed, accounted); the last answers while Slurm is silent."""
    listed, accounted, _ = await services.listing.of_user(username, fresh=fresh)
    return listed, accounted


def held_in_runs(services: HubServices, user, listing: tuple[list, list]) -> list[Held]:
    """What the user's runs and sweeps hold, and their submissions under way (no await: a check's one step)."""
    runs = record_of(services, user).runs
    per_gpu = services.settings.slurm.shards.per_gpu
    recorded = runs_held(runs, *listing, services.settings.runs.list_seconds, time.time(), per_gpu)
    return recorded + services.gpu_claims.of(user.name)


class OverGpuCap(ValueError):
    """A run or sweep that would take the user past sessions.max_gpus_per_user; str(e) says what counts."""


async def within_gpu_cap(
    services: HubServices, spawner, request: RunRequest, sweep: Sweep | None, submit: Callable[[], Awaitable[T]]
) -> T:
    """`submit()` (the sbatch of the run or sweep `request` asks for) when it fits sessions.max_gpus_per_user
    beside all the user holds; OverGpuCap with words otherwise.  Its claim ends when `submit` returns, and the
    caller records the run before it awaits again."""
    cap = services.settings.sessions.max_gpus_per_user
    per_task = task_gpus(request.settings(), services.settings.slurm.shards.per_gpu)
    if not cap or not per_task:
        return await submit()
    user = spawner.user
    gpus = sweep_gpus(per_task, sweep.tasks, sweep.at_once) if sweep else per_task
    at_once = round(gpus / per_task)
    asked = f" ({per_task:g} GPU{'s' if per_task != 1 else ''} × {at_once} runs at once)" if sweep else ""
    why = ""
    for fresh in (False, True):  # the shared listing; then, for a refusal that counts runs, a fresh squeue
        listing = await user_runs_listing(services, user.name, fresh=fresh)
        held = sessions_held(user) + held_in_runs(services, user, listing)  # no await from here to the claim
        why = gpu_problem(held, gpus, cap, "this sweep" if sweep else "this run", asked)
        if not why or not any(h.kind != "session" and h.name != "being submitted" for h in held):
            break
    if why:
        log.warning("Run of %s refused: %s", user.name, why)
        raise OverGpuCap(why)
    token = services.gpu_claims.claim(user.name, gpus)
    try:
        return await submit()
    finally:
        services.gpu_claims.release(user.name, token)

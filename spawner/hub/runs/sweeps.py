"""Sweeps: a notebook's grid run as one Slurm job array (hub side): the panel's one row, the table, its end.

Submitted by runs/service.py (one sbatch --array, never one per point).  The
panel's row and the table are built from the shared listing (one squeue, one
sacct for everyone) plus, for the table, one `head` as the user of every
started task's results file (contract.sweep_results): never a Slurm call or a
file read per task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ...contract import SWEEP_RESULTS_BYTES, sweep_results
from ...slurmvocab import PENDING, AccountedJob, ListedJob
from ..slurm.client import SlurmError
from .board import newest
from .grid import Sweep
from .sweepboard import (
    TaskState,
    array_id,
    best_task,
    counts,
    counts_words,
    ended_words,
    objective_of,
    read_results,
    task_row,
    task_states,
)

if TYPE_CHECKING:
    from ..session.spawner import SlurmGPUSpawner
    from ..slurm.services import HubServices

log = logging.getLogger("JupyterHub").getChild("runs")


def sweep_of(run: dict) -> Sweep:
    return Sweep.from_settings(run["settings"]["sweep"])


SETTLE_LISTINGS = 3  # a sweep older than this many listings (runs.list_seconds) is in every listing made since


def settled(run: dict, list_seconds: int) -> bool:
    return time.time() - run.get("submitted_ts", 0) > max(30, SETTLE_LISTINGS * list_seconds)


def states_of(run: dict, listed: list[ListedJob], accounted: list[AccountedJob], list_seconds: int) -> list[TaskState]:
    return task_states(run["job_id"], run["sweep"]["tasks"], listed, accounted, settled(run, list_seconds))


def grouped(jobs: list, arrays: set[str]) -> dict[str, list]:
    """The entries of each of `arrays` in a listing, in one pass (a user's listing may hold thousands of entries,
    and a record fifty sweeps: never a pass per sweep)."""
    found: dict[str, list] = {a: [] for a in arrays}
    for job in jobs:
        array = array_id(job.job_id)
        if array in found:
            found[array].append(job)
    return found


@dataclass(frozen=True)
class SweepCounts:
    """What a sweep's row says of its tasks: their counts, whether any is in the queue, the nodes they run on."""

    tally: dict[str, int]
    in_queue: bool
    node_list: str


def sweep_counts(states: list[TaskState]) -> SweepCounts:
    running = [s.listed for s in states if s.listed is not None and s.state not in PENDING]
    nodes = ",".join(sorted({j.node_list for j in running if j.node_list}))[:200]
    return SweepCounts(counts(states), any(s.active for s in states), nodes)


Memo = Callable[[tuple, Callable[[], SweepCounts]], SweepCounts]


def fold_sweeps(
    rows: list[dict], runs: list[dict], listed: list, accounted: list, list_seconds: int, memo: Memo | None = None
) -> list[dict]:
    """The panel's rows with each sweep as one row: its tasks' rows folded into it, its counts in words.

    `memo(key, compute)`: a sweep's counts kept for as long as the listing's answers are the same
    (JobListing.derived): a panel's request then counts no sweep's tasks again."""
    sweeps = {r["job_id"]: r for r in runs if r.get("sweep") and r.get("settings", {}).get("sweep")}
    if not sweeps:
        return rows
    groups: list[dict[str, list]] = []

    def count(run: dict) -> SweepCounts:
        if not groups:  # one pass over the listing, and only when some sweep's counts are not kept
            groups.extend((grouped(listed, set(sweeps)), grouped(accounted, set(sweeps))))
        array = run["job_id"]
        return sweep_counts(states_of(run, groups[0][array], groups[1][array], list_seconds))

    kept = []
    for row in rows:
        if array_id(row["job_id"]) in sweeps:
            continue  # a task (or the tasks not yet started) of a sweep: said in the sweep's row
        run = sweeps.get(row["job_id"])
        if run is not None:
            key = (run["job_id"], run["sweep"]["tasks"], settled(run, list_seconds))
            _sweep_row(row, run, memo(key, partial(count, run)) if memo is not None else count(run))
        kept.append(row)
    active = sorted((r for r in kept if r["active"]), key=newest)
    return active + sorted((r for r in kept if not r["active"]), key=newest)


def _sweep_row(row: dict, run: dict, found: SweepCounts) -> None:
    tally = found.tally
    in_queue = found.in_queue and not run.get("ended")
    row["sweep"] = {**run["sweep"], "counts": tally}
    row.update(can_cancel=in_queue)
    if in_queue:
        row.update(active=True, words=counts_words(tally), why="", state="RUNNING" if tally["running"] else "PENDING")
    elif not run.get("ended"):  # every task has ended; the tracker reads the results for the one notice (its why)
        row.update(active=True, words=counts_words(tally)[:-1] + "; reading the results...", why="")
    else:
        row["active"] = False
    if found.node_list:
        row["node_list"] = found.node_list


async def table(services: HubServices, spawner: SlurmGPUSpawner, run: dict, home: str) -> dict:
    """The sweep's table: one line per task with its parameters, state, time and results."""
    user = spawner.user.name
    listed, accounted, problems = await services.listing.of_user(user)
    problems = list(problems)
    sweep = sweep_of(run)
    points = sweep.points()
    states = states_of(run, listed, accounted, services.settings.runs.list_seconds)
    folder = f"{home}/{run['output']}"
    started = {t: sweep_results(folder, t) for t, s in enumerate(states) if s.state and s.state not in PENDING}
    try:
        texts = await services.client.read_many_as(user, list(started.values()), SWEEP_RESULTS_BYTES)
    except SlurmError as e:
        log.warning("The results of sweep %s of %s: %s", run["job_id"], user, e)
        texts = {}
        problems.append("The tasks' results could not be read just now; they show again at the next refresh.")
    rows = [
        task_row(
            t,
            run["job_id"],
            points[t],
            states[t],
            {
                "results": read_results(texts.get(started.get(t, ""), "")),
                "output": f"{run['output']}/task-{t}.ipynb",
                "log": run["log"].replace("%a", str(t)),
            },
        )
        for t in range(len(points))
    ]
    return _summary(run, sweep, rows, problems)


def _summary(run: dict, sweep: Sweep, rows: list[dict], problems: list[str]) -> dict:
    objective = objective_of(sweep.objective, [r["results"] for r in rows])
    best = best_task([(r["task"], r["results"].get(objective)) for r in rows], sweep.best)
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row["results"]))
    return {
        "job_id": run["job_id"],
        "path": run["settings"].get("path", ""),
        "varied": sweep.varied,
        "parameters": [name for name, _ in sweep.axes],
        "results": list(names),
        "objective": objective,
        "best": sweep.best,
        "best_task": best,
        "tasks": rows,
        "error": " ".join(problems),
    }


def ended(summary: dict, tally: dict[str, int]) -> tuple[str, str]:
    """(Slurm-like state, words) of a sweep that ended, with its best result."""
    best = summary["best_task"]
    row = summary["tasks"][best] if best is not None else None
    return ended_state(tally), ended_words(tally, summary["objective"], summary["best"], row, summary["varied"])


def ended_state(tally: dict[str, int]) -> str:
    """A Slurm-like word for a sweep that ended: COMPLETED when every task did, CANCELLED, else FAILED."""
    if tally["completed"] == sum(tally.values()):
        return "COMPLETED"
    if tally["cancelled"] and not (tally["failed"] or tally["timeout"]):
        return "CANCELLED"
    return "FAILED"

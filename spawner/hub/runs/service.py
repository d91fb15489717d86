"""Runs: submit, list, cancel, run again, read the log (hub side; the REST API in runs/api.py calls these).

Every Slurm command runs as the user through the hub's sudo rule (sbatch,
scancel, head and tail: never a root path); the notebook is read as the user
too, so a run can only be made of what the user may read.  What the hub
remembers of each run (its file, settings, output and log, and how it ended)
is kept in the user's saved record (spawner/hub/session/record.py, `runs`), so it
outlives hub restarts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from ... import sweepgrid
from ...contract import run_log, run_output, sweep_folder, sweep_log
from ...notebookparams import NotRunnable, Parameter, check_values
from ...slurmgres import share_choices
from ..request.jobrequest import sbatch_argv
from ..request.options import OptionsError
from ..request.refusal import SessionRefused
from ..request.sessionlimits import user_sessions
from ..session.userrecord import save_user_record, user_record
from ..slurm.client import SlurmError
from ..slurm.clusterinfo import partition_gpu_types, partition_shards
from ..slurm.fileparse import ParseRefused
from ..slurm.joblisting import STALE_WAIT
from . import jobspage
from .board import job_rows
from .grid import Sweep, SweepError, gpu_hours, parse_sweep
from .jobscript import run_job, run_script, shape_of
from .limits import OverGpuCap, task_gpus, within_gpu_cap
from .request import ALLOWED_KEYS, RunRequest, parse_run
from .sweeps import fold_sweeps, states_of, table

if TYPE_CHECKING:
    from ..session.spawner import SlurmGPUSpawner
    from ..slurm.services import HubServices

log = logging.getLogger("JupyterHub").getChild("runs")

NO_SLURM = "The scheduler (Slurm) is not answering; nothing was submitted. Try again in a minute."


class RunRefused(Exception):
    """A run the hub will not submit (or act on); `status` is the HTTP status, str(e) what the user reads."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


async def read_declared(services: HubServices, username: str, home: str, request: RunRequest) -> list[Parameter]:
    """The file's parameters (a notebook's cell; none of a script), the file read as the user and parsed outside
    the hub (spawner/hub/slurm/fileparse.py: a few at once); RunRefused with words a user acts on."""
    path = request.path
    kind = "notebook" if request.kind == "notebook" or request.sweep is not None else request.kind
    try:
        answer = await services.file_parses.read_as(
            username, f"{home.rstrip('/')}/{path}", services.settings.runs.max_notebook_mib * 1024 * 1024, kind, path
        )
    except ParseRefused as e:
        raise RunRefused(str(e), e.status) from None
    except SlurmError as e:
        if "No such file" in e.stderr:
            raise RunRefused(f"{path}: there is no such file in your home; save it first, or check the name.") from None
        if "Permission denied" in e.stderr:
            raise RunRefused(f"{path}: you may not read this file.") from None
        if "Is a directory" in e.stderr:
            raise RunRefused(f"{path} is a folder; choose a notebook or script.") from None
        log.warning("Reading %s for a run of %s: %s", path, username, e)
        raise RunRefused(f"{path} could not be read ({e.stderr or e}).", 503) from None
    if "refused" in answer:
        raise RunRefused(str(answer["refused"]))
    return [Parameter(**found) for found in answer["parameters"]]


async def _parameters(declared: list[Parameter], request: RunRequest) -> dict:
    """The request's parameters checked against the notebook's parameters cell (RunRefused on a mismatch)."""
    if request.kind != "notebook":
        return {}
    try:
        return check_values(request.parameters, declared, request.path)
    except (NotRunnable, ValueError) as e:
        raise RunRefused(str(e)) from None


MAX_SWEEP_RECORD = 64 * 1024  # bytes of a sweep's values the hub keeps in the user's record (for its table)


async def _sweep(declared: list[Parameter], request: RunRequest, settings) -> Sweep | None:
    """The request's sweep checked against the notebook and the admin's limits (RunRefused with words)."""
    if request.sweep is None:
        return None
    limits = settings.runs.sweeps
    try:
        sweep = parse_sweep(request.sweep, declared, request.path, limits)
    except (NotRunnable, SweepError) as e:
        raise RunRefused(str(e)) from None
    if len(json.dumps(sweep.settings())) > MAX_SWEEP_RECORD:
        raise RunRefused(
            f"sweep: at most {MAX_SWEEP_RECORD // 1024} KiB of values in a grid; use ranges with fewer steps."
        )
    per_task = task_gpus(request.settings(), settings.slurm.shards.per_gpu)
    cost = gpu_hours(sweep.tasks, 1, per_task, request.hours)
    if limits.max_gpu_hours and cost > limits.max_gpu_hours:
        raise RunRefused(
            f"sweep: {sweep.tasks} runs × {per_task:g} GPU(s) × {request.hours:g} h is "
            f"{cost:,.1f} GPU-hours, more than the {limits.max_gpu_hours:g} a sweep may ask for here; "
            "fewer runs (a random sample), fewer GPUs or fewer hours."
        )
    return sweep


def sweep_facts(sweep: Sweep, request: RunRequest, per_gpu: int = 0) -> dict:
    """What the record and the panel's row keep of a sweep."""
    return {
        "tasks": sweep.tasks,
        "at_once": sweep.at_once,
        "varied": sweep.varied,
        "gpu_hours": round(gpu_hours(sweep.tasks, 1, task_gpus(request.settings(), per_gpu), request.hours), 2),
        "objective": sweep.objective,
        "best": sweep.best,
    }


async def _account(spawner: SlurmGPUSpawner):
    """The unix account the user's jobs run as, with the same checks as a session's start: RunRefused 403
    with words for root, system accounts, anyone refused, and an account that is not the directory's."""
    try:
        unix = spawner.unix_account()
        await spawner.check_directory_account(unix)
    except SessionRefused as e:
        raise RunRefused(e.jupyterhub_message, 403) from None
    return unix


async def form(services: HubServices, spawner: SlurmGPUSpawner, path: object) -> dict:
    """What JupyterLab's dialog offers for `path`: its kind and parameters, the partitions, the defaults."""
    try:
        request = parse_run({"path": path}, services.settings)
    except OptionsError as e:
        raise RunRefused(str(e)) from None
    unix = await _account(spawner)
    found = await read_declared(services, unix.name, unix.home, request)
    settings = services.settings
    slurm = settings.slurm
    types, accounts, shared = await _choices(services, unix.name)
    return {
        "path": request.path,
        "kind": request.kind,
        "parameters": [p.to_dict() for p in found],
        "partitions": [
            {
                "name": p.name,
                "display_name": p.display_name or p.name,
                "max_gpus": p.max_gpus,
                "max_nodes": p.max_nodes,
                "gpu_types": [
                    {"name": t, "label": slurm.gpu_label(t)}
                    for t in sorted(types.get(p.name, set()) - set(slurm.hidden_gpu_types))
                ]
                if p.max_gpus
                else [],
                "shares": share_options(slurm.shards.per_gpu) if p.max_gpus and p.name in shared else [],
            }
            for p in slurm.partitions
        ],
        "accounts": [{"name": a, "label": a} for a in accounts],
        "qos": [{"name": name, "label": label} for name, label in slurm.qos_choices.items()],
        "defaults": {
            "partition": slurm.default_partition.name,
            "nodes": 1,
            "gpus": 0,
            "hours": settings.runs.default_hours,
        },
        "max_hours": settings.runs.max_hours,
        "sweeps": {
            "enabled": settings.runs.sweeps.enabled and request.kind == "notebook",
            "max_tasks": settings.runs.sweeps.max_tasks,
            "max_gpu_hours": settings.runs.sweeps.max_gpu_hours,
            "max_at_once": settings.runs.sweeps.max_at_once,
        },
    }


def share_options(per_gpu: int) -> list[dict]:
    """The run dialog's choices of a share of a GPU (pure): slurmgres.share_choices, as the dialog's options."""
    return [{"name": str(k), "label": words} for k, words in share_choices(per_gpu)]


async def _choices(services: HubServices, user: str) -> tuple[dict[str, set[str]], tuple[str, ...], set[str]]:
    """Each partition's GPU types, the user's Slurm accounts (default first) and the partitions whose nodes have
    shares of a GPU, from the hub's shared answers; none of them while Slurm does not answer (the dialog then
    offers no choice, and the defaults apply)."""
    nodes, known = await asyncio.gather(services.cluster.nodes(), services.accounts(), return_exceptions=True)
    types: dict[str, set[str]] = {}
    accounts: tuple[str, ...] = ()
    shared: set[str] = set()
    if isinstance(nodes, SlurmError):
        log.warning("The run dialog offers no GPU type: %s", nodes)
    elif isinstance(nodes, BaseException):
        raise nodes
    else:
        types = partition_gpu_types(nodes)
        shared = {partition for partition, most in partition_shards(nodes).items() if most}
    if isinstance(known, SlurmError):
        log.warning("The run dialog offers no account: %s", known)
    elif isinstance(known, BaseException):
        raise known
    else:
        accounts = known.of(user)
    site = services.settings.slurm.account  # charged when none is named: the dialog's first, "(your default)"
    if site in accounts:
        accounts = (site, *(a for a in accounts if a != site))
    return types, accounts, shared


async def submit(services: HubServices, spawner: SlurmGPUSpawner, options: object) -> dict:
    """Validate, read the file as the user, check its parameters, sbatch as the user, remember the run."""
    settings = services.settings
    if not settings.runs.enabled:
        raise RunRefused("Running notebooks and scripts as jobs is turned off on this cluster.", 403)
    try:
        known = await spawner.slurm_facts(options)
        request = parse_run(options, settings, known.gpu_types, known.accounts, known.facts, known.shards)
    except OptionsError as e:
        raise RunRefused(str(e)) from None
    unix = await _account(spawner)
    declared = await read_declared(services, unix.name, unix.home, request)
    sweep = await _sweep(declared, request, settings)
    parameters = await _parameters(declared, request) if sweep is None else {}
    account = spawner.account()
    argv = sbatch_argv(settings.slurm, run_job(settings, request, account, sweep))
    script = run_script(settings, request, account, parameters, sweep)
    try:
        sbatch = partial(services.client.submit_as, unix.name, argv, script, spawner.user_env({}))
        job_id = await within_gpu_cap(services, spawner, request, sweep, sbatch)  # sessions.max_gpus_per_user
    except OverGpuCap as e:
        raise RunRefused(str(e)) from None
    except SlurmError as e:
        log.warning("Run of %s (%s) refused by Slurm: %s", unix.name, request.path, e)
        raise RunRefused(_slurm_words(e), 503 if not e.stderr else 400) from None
    run = _record(request, settings, unix.home.rstrip("/"), job_id, parameters, sweep)
    record = user_record(spawner)
    record.runs = ([run] + [r for r in record.runs if r.get("job_id") != job_id])[: settings.runs.keep]
    save_user_record(spawner)
    log.info("Run of %s submitted: job %s, %s (%s)", unix.name, job_id, request.path, run["summary"])
    return run


def _record(request: RunRequest, settings, home: str, job_id: str, parameters: dict, sweep: Sweep | None) -> dict:
    """What the hub remembers of a run it submitted (the user's record: the panel, "run again", the tracker)."""
    output_dir = f"{home}/{settings.runs.output_folder}"
    run = {
        "job_id": job_id,
        "kind": request.kind,
        "settings": {**request.settings(), "parameters": parameters},
        "summary": shape_of(request, settings).summary(),
        "submitted": datetime.now().isoformat(timespec="minutes"),
        "submitted_ts": time.time(),
        "output": _relative(run_output(output_dir, request.path, job_id), home) if request.kind == "notebook" else "",
        "log": _relative(run_log(home).replace("%j", job_id), home),
    }
    if sweep is not None:
        run["settings"] = {**request.settings(), "sweep": sweep.settings()}
        run["settings"].pop("parameters", None)
        run["sweep"] = sweep_facts(sweep, request, settings.slurm.shards.per_gpu)
        run["summary"] = f"{sweep.tasks} runs, at most {sweep.at_once} at once, each: {run['summary']}"
        run["output"] = _relative(sweep_folder(output_dir, request.path, job_id), home)
        run["log"] = _relative(sweep_log(home).replace("%A", job_id), home)  # %a: each task's number
    return run


def _relative(path: str, home: str) -> str:
    return path[len(home) + 1 :] if path.startswith(home + "/") else path


def _slurm_words(e: SlurmError) -> str:
    if not e.stderr:
        return NO_SLURM
    first = e.stderr.splitlines()[-1].replace("sbatch: error: ", "")
    return f"Slurm refused the job: {first}"


def session_jobs(spawner: SlurmGPUSpawner) -> frozenset[str]:
    """The user's session jobs the hub knows of, of all their sessions: the current ones and their histories'."""
    known = {session.job_id for session in user_sessions(spawner.user)}
    known |= {h.get("job_id", "") for h in user_record(spawner).history}
    return frozenset(known - {""})


def find_run(spawner: SlurmGPUSpawner, job_id: str) -> dict | None:
    return next((r for r in user_record(spawner).runs if r.get("job_id") == job_id), None)


def find_task(spawner: SlurmGPUSpawner, job_id: str) -> tuple[dict, int] | None:
    """A sweep's task by its id (123_4) -> (the sweep's run, 4); None when it is no task of a sweep of theirs."""
    array, _, task = job_id.partition("_")
    run = find_run(spawner, array) if task.isdigit() and len(task) <= 9 else None
    if run is None or not run.get("sweep") or int(task) >= run["sweep"].get("tasks", 0):
        return None
    return run, int(task)


def run_or_task(spawner: SlurmGPUSpawner, job_id: str) -> tuple[dict | None, int | None]:
    """The run a job id names: a sweep's task (123_4) -> (the sweep's run, 4); any other -> (its run or None, None)."""
    found = find_task(spawner, job_id)
    return found if found else (find_run(spawner, job_id), None)


def task_options(run: dict, task: int) -> dict:
    """A sweep task's settings as one run of its own (its parameters: its point of the grid)."""
    options = {k: v for k, v in run["settings"].items() if k in ALLOWED_KEYS and k != "sweep"}
    options["parameters"] = sweepgrid.task_point(run["settings"]["sweep"], task)  # that point alone, as the task
    return options


async def again(services: HubServices, spawner: SlurmGPUSpawner, job_id: str) -> dict:
    found = find_task(spawner, job_id)
    if found is not None:
        return await submit(services, spawner, task_options(*found))
    run = find_run(spawner, job_id)
    if run is None or not run.get("settings"):
        raise RunRefused(f"Job {job_id} was not run from the portal, so there are no settings to repeat.", 404)
    again_options = {k: v for k, v in run["settings"].items() if k in ALLOWED_KEYS}
    if "sweep" in again_options:
        again_options = {k: v for k, v in again_options.items() if k != "parameters"}
    return await submit(services, spawner, again_options)


async def jobs(
    services: HubServices, spawner: SlurmGPUSpawner, limit: int = jobspage.DEFAULT_LIMIT, offset: int = 0
) -> dict:
    """A page of the user's jobs for the panel (runs/jobspage.py): {"jobs": rows, "total", "limit", "offset",
    "error": a sentence when a source did not answer}.  Rows are built for the jobs the page can show only."""
    name = spawner.user.name
    # one budget for Slurm's new answers, the listing's and the places': waited one after the other, a busy Slurm
    # held the home page's refresh twice as long (CI's soak: 1.24 s, over its 1-s promise)
    deadline = time.monotonic() + STALE_WAIT
    try:
        await _account(spawner)
    except RunRefused as e:
        return {**jobspage.page([], limit, offset, 0), "error": str(e)}
    listed, accounted, problems = await services.listing.of_user(name)
    runs = user_record(spawner).runs
    sweeps = {r["job_id"] for r in runs if r.get("sweep")}
    known = {j.job_id for j in listed} | {r.get("job_id", "") for r in runs}
    window = jobspage.window(accounted, sweeps, known, offset + limit)
    places = await _places(services, listed, max(0.0, deadline - time.monotonic()))
    rows = job_rows(listed, window.accounted, runs, places, session_jobs(spawner))

    def memo(key: tuple, compute):  # a sweep's counts, kept while the shared listing's answers are the same
        return services.listing.derived(name, key, compute)

    rows = fold_sweeps(rows, runs, listed, accounted, services.settings.runs.list_seconds, memo)
    return {**jobspage.page(rows, limit, offset, window.left_out), "error": " ".join(problems)}


async def _places(services: HubServices, listed: list, wait: float) -> dict[str, int]:
    """Each waiting job's place in its partition's line (one shared, cached squeue a partition, the partitions'
    asked at once); while a new squeue is slow, the older line after `wait` s."""
    # only the admin's partitions: a job of the user's may name others, or several ("a,b"), none with a place here
    offered = {p.name for p in services.settings.slurm.partitions}
    waiting = [job for job in listed if job.pending and job.reason not in ("", "None") and job.partition in offered]
    partitions = sorted({job.partition for job in waiting})
    orders = await asyncio.gather(*(services.queue_order(p, wait) for p in partitions), return_exceptions=True)
    lines: dict[str, dict[str, int]] = {}
    for partition, order in zip(partitions, orders, strict=True):
        if isinstance(order, BaseException) and not isinstance(order, SlurmError):
            raise order
        lines[partition] = {} if isinstance(order, SlurmError) else {j: n for n, j in enumerate(order, 1)}
    return {job.job_id: lines[job.partition][job.job_id] for job in waiting if job.job_id in lines[job.partition]}


async def tasks(services: HubServices, spawner: SlurmGPUSpawner, job_id: str) -> dict:
    """A sweep's table (runs/sweeps.py)."""
    run = find_run(spawner, job_id)
    if run is None or not run.get("sweep"):
        raise RunRefused(f"Job {job_id} is not a sweep of yours.", 404)
    unix = await _account(spawner)
    return await table(services, spawner, run, unix.home.rstrip("/"))


async def own_job(services: HubServices, spawner: SlurmGPUSpawner, job_id: str):
    """The user's job as squeue lists it; RunRefused 404 when it is none of theirs (or Slurm forgot it)."""
    await _account(spawner)
    listed, _, problems = await services.listing.of_user(spawner.user.name)
    job = next((j for j in listed if j.job_id == job_id), None)
    if job is None and run_or_task(spawner, job_id)[0] is None:
        raise RunRefused(f"Job {job_id} is not one of your jobs.", 404)
    return job


async def _sweep_in_queue(services: HubServices, spawner: SlurmGPUSpawner, job_id: str) -> bool | None:
    """Whether a sweep (123) or one of its tasks (123_4) has a task in the queue; None for any other job."""
    run, task = run_or_task(spawner, job_id)
    if run is None or not run.get("sweep"):
        return None
    listed, accounted, _ = await services.listing.of_user(spawner.user.name)
    states = states_of(run, listed, accounted, services.settings.runs.list_seconds)
    return states[task].active if task is not None else any(s.active for s in states)


async def cancel(services: HubServices, spawner: SlurmGPUSpawner, job_id: str) -> None:
    job = await own_job(services, spawner, job_id)
    in_queue = await _sweep_in_queue(services, spawner, job_id)
    if in_queue is False or (in_queue is None and job is not None and not job.in_queue):
        raise RunRefused(f"Job {job_id} has already ended.", 409)
    if job_id in session_jobs(spawner):
        raise RunRefused(f"Job {job_id} is your JupyterLab session; stop it from the home page.", 409)
    try:
        await services.client.cancel(spawner.user.name, job_id)  # scancel as the user: only their own jobs
    except SlurmError as e:
        log.warning("scancel %s for %s: %s", job_id, spawner.user.name, e)
        raise RunRefused(NO_SLURM.replace("nothing was submitted", "the job was not cancelled"), 503) from None
    log.info("Job %s of %s cancelled from the jobs panel", job_id, spawner.user.name)


async def log_tail(services: HubServices, spawner: SlurmGPUSpawner, job_id: str, lines: int) -> str:
    run, task = run_or_task(spawner, job_id)
    if run is None or not run.get("log"):
        raise RunRefused(f"Job {job_id} was not run from the portal; its output is where its own script wrote it.", 404)
    if run.get("sweep") and task is None:
        raise RunRefused(f"Sweep {job_id} has one log per task: open a task's log from the sweep's table.", 404)
    unix = await _account(spawner)
    path = run["log"].replace("%a", str(task)) if task is not None else run["log"]
    return await services.client.output_tail(unix.name, f"{unix.home.rstrip('/')}/{path}", lines)

"""What the jobs panel and the home page show of a user's jobs (pure; hub side).

Built from the shared squeue listing (jobs Slurm still lists), Slurm's
accounting (finished jobs) and the hub's records of the runs it submitted
(their file, settings, output notebook and log).  Every state is said in
words; a finished job says why it ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...contract import RUN_MARK
from ...slurmvocab import ENDING, PENDING, RUNNING, AccountedJob, ListedJob, parse_limit
from ..request.resources import duration_words
from ..session.progress import PENDING_REASONS, ordinal

_FAILED = re.compile(rf"^{re.escape(RUN_MARK)} failed cell=(\S*) error=(.*)$")


@dataclass(frozen=True)
class Outcome:
    """How the runner says a run ended (its RUN_MARK lines in the job's log)."""

    failed_cell: str = ""  # papermill's execution count of the cell that raised ("" for none, or not a cell)
    error: str = ""
    stopped: bool = False  # Slurm's SIGTERM arrived (time limit or cancel)
    done: bool = False


def read_outcome(tail: str) -> Outcome:
    failed_cell, error, stopped, done = "", "", False, False
    for line in tail.splitlines():
        line = line.rstrip()
        found = _FAILED.match(line)
        if found:
            failed_cell, error = found.group(1), found.group(2).strip()
        elif line.startswith(f"{RUN_MARK} stopped"):
            stopped = True
        elif line == f"{RUN_MARK} done":
            done = True
    return Outcome(failed_cell, error, stopped, done)


def _limit_words(limit: str) -> str:
    try:
        minutes = parse_limit(limit) if limit else None
    except ValueError:
        return limit
    return duration_words(minutes) if minutes else ""


def ended_why(state: str, exit_code: str, limit: str, kind: str, outcome: Outcome, started: bool) -> str:
    """One sentence: why a job ended, in words a data scientist acts on."""
    keeps = "; the output notebook keeps the cells that ran" if kind == "notebook" else ""
    if state == "COMPLETED":
        return "Completed."
    if state == "FAILED":
        if outcome.failed_cell:
            return f"Failed: cell [{outcome.failed_cell}] raised {outcome.error}" + keeps + "."
        if outcome.error:
            return f"Failed: {outcome.error}."
        status = exit_code.split(":")[0] if exit_code else ""
        return f"Failed (exit status {status or 'unknown'}); see the log."
    if state == "TIMEOUT":
        limit_words = _limit_words(limit)
        return f"Reached its time limit{' of ' + limit_words if limit_words else ''}{keeps}."
    if state == "CANCELLED":
        return "Cancelled" + ("" if started else " before it started") + (keeps if started else "") + "."
    if state == "OUT_OF_MEMORY":
        return "Ran out of memory; run it with more GPUs per node (each brings memory)" + keeps + "."
    if state == "NODE_FAIL":
        return "Ended because a node failed" + keeps + "."
    if state == "PREEMPTED":
        return "Preempted: Slurm gave its resources to a job of higher priority" + keeps + "."
    if state in ("BOOT_FAIL", "DEADLINE"):
        return f"Ended ({state.lower().replace('_', ' ')})."
    if not state:
        return "Ended; Slurm no longer lists it and its accounting did not say how."
    return f"Ended ({state.lower()})."


def active_words(job: ListedJob, place: int | None) -> str:
    if job.state in PENDING:
        reason = job.reason
        words = PENDING_REASONS.get(reason, "waiting in the queue")
        text = f"Waiting in the queue on {job.partition}: {words}" + (
            f" ({reason})" if reason and reason != "None" else ""
        )
        if place:
            text += f"; {ordinal(place)} in line"
        if job.start:
            text += f"; Slurm expects a start at {job.start.replace('T', ' ')[:16]}"
        return text + "."
    if job.state in ENDING:
        return f"Finishing on {job.node_list}."
    left = f"; {job.time_left} left" if job.time_left else ""
    return f"Running on {job.node_list} for {job.elapsed}{left}."


def _from_run(run: dict) -> dict:
    settings = run.get("settings") or {}
    return {
        "portal": True,
        "kind": run.get("kind") or settings.get("kind", ""),  # records of the first release kept it in settings
        "path": settings.get("path", ""),
        "gpus": settings.get("gpus", 0),
        "summary": run.get("summary", ""),
        "output": run.get("output", ""),
        "log": run.get("log", ""),
        "submitted": run.get("submitted", ""),
        "can_again": bool(settings),
        "sweep": run.get("sweep"),  # a sweep's facts (runs/service.py); its counts come from runs/sweeps.py
    }


def _blank(job_id: str) -> dict:
    return {
        "job_id": job_id,
        "name": "",
        "portal": False,
        "kind": "",
        "path": "",
        "state": "",
        "words": "",
        "active": False,
        "partition": "",
        "nodes": 0,
        "node_list": "",
        "gpus": 0,
        "elapsed": "",
        "time_left": "",
        "submitted": "",
        "ended": "",
        "why": "",
        "summary": "",
        "output": "",
        "log": "",
        "can_cancel": False,
        "can_again": False,
        "sweep": None,
    }


def job_rows(
    listed: list[ListedJob],
    accounted: list[AccountedJob],
    runs: list[dict],
    places: dict[str, int],
    sessions: frozenset[str] = frozenset(),
) -> list[dict]:
    """The user's jobs: those still in the queue first (newest first), then the finished ones (newest first).

    Slurm's listings carry no job names (slurmvocab.ALL_JOBS_FORMAT says why): a run is named by its
    file, a job of `sessions` (the user's session jobs, from the hub's record) is their JupyterLab:
    shown, never cancelled from the panel that runs in it (the home page's Stop ends a session, with its
    saving and bookkeeping), and any other job by its id.
    """
    rows: dict[str, dict] = {}
    _add_accounted(rows, accounted)
    _add_listed(rows, listed, places)  # what squeue says now wins over the accounting's last word
    _add_runs(rows, runs)
    _name_rows(rows, sessions)
    active = sorted((r for r in rows.values() if r["active"]), key=newest)
    finished = sorted((r for r in rows.values() if not r["active"]), key=newest)
    return active + finished


def _add_accounted(rows: dict[str, dict], accounted: list[AccountedJob]) -> None:
    for job in accounted:
        row = rows.setdefault(job.job_id, _blank(job.job_id))
        row.update(
            state=job.state,
            partition=job.partition,
            nodes=job.nodes,
            node_list=job.node_list,
            elapsed=job.elapsed,
            submitted=job.submitted.replace("T", " ")[:16],
            ended=job.end.replace("T", " ")[:16],
        )
        if job.state in PENDING | RUNNING | ENDING:  # squeue's fresher word, below, wins when it has one
            row.update(active=True, can_cancel=True, words=f"{job.state.capitalize()} (Slurm's accounting).")
        else:
            row["why"] = ended_why(job.state, job.exit_code, job.limit, "", Outcome(), bool(job.start))


def _add_listed(rows: dict[str, dict], listed: list[ListedJob], places: dict[str, int]) -> None:
    for job in listed:
        row = rows.setdefault(job.job_id, _blank(job.job_id))
        active = job.in_queue
        row.update(
            state=job.state,
            active=active,
            partition=job.partition,
            nodes=job.nodes,
            node_list=job.node_list,
            elapsed=job.elapsed,
            time_left=job.time_left,
            submitted=job.submitted.replace("T", " ")[:16],
            words=active_words(job, places.get(job.job_id)) if active else "",
            can_cancel=active,
        )
        if not active and not row["why"]:
            row["why"] = ended_why(job.state, "", job.limit, "", Outcome(), bool(job.elapsed and job.elapsed != "0:00"))


def _add_runs(rows: dict[str, dict], runs: list[dict]) -> None:
    """The portal's own runs: what the hub knows of them."""
    for run in runs:
        job_id = run.get("job_id", "")
        known = job_id in rows
        row = rows.setdefault(job_id, _blank(job_id))
        row.update({k: v for k, v in _from_run(run).items() if v or k in ("portal", "can_again", "sweep")})
        if run.get("why"):  # the tracker's word, with the runner's (the failed cell, the kept output)
            row.update(why=run["why"], state=run.get("state") or row["state"], ended=run.get("ended") or row["ended"])
        elif known and not row["active"]:  # ended a moment ago: the tracker reads its log within seconds
            row.update(why="", words="Ended; reading how from its log...")
        elif not known:  # submitted a moment ago, or Slurm's answers do not reach back that far
            row.update(
                active=not run.get("ended"),
                words="Submitted; waiting for Slurm's next listing." if not run.get("ended") else "",
                partition=(run.get("settings") or {}).get("partition", ""),
                nodes=(run.get("settings") or {}).get("nodes", 0),
                can_cancel=not run.get("ended"),
            )
        if row["active"]:
            row["why"] = ""


def _name_rows(rows: dict[str, dict], sessions: frozenset[str]) -> None:
    for row in rows.values():
        if row["portal"]:
            row["name"] = row["path"].rsplit("/", 1)[-1]
        elif row["job_id"] in sessions:
            row.update(kind="session", can_cancel=False, name="JupyterLab session")
        else:
            row["name"] = f"job {row['job_id']}"


def newest(row: dict) -> tuple:
    return job_order(row["job_id"])


def job_order(job_id: str) -> tuple:
    """A sort key of job ids: the newest first."""
    number = job_id.split("_")[0].split("+")[0]
    return (-int(number) if number.isdigit() else 0, job_id)

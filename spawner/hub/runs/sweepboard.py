"""What the jobs panel shows of a sweep: its one row's counts, and its table of tasks (pure; hub side).

From the same shared listing as every job (one squeue and one sacct for all
users: the number of tasks never adds a Slurm call).  squeue lists an array's
tasks not yet started as one line (`123_[5-999%4]`), each started task as
`123_4`; the accounting the same.  What squeue says now wins over the
accounting.  A task neither lists is waiting while the sweep is young or
squeue still lists some task of it; once squeue lists none, a task nobody
lists never started and never will: it was cancelled while it waited (Slurm's
accounting keeps no record of a waiting task cancelled on its own, and lists
the waiting ones cancelled together only when asked for that job by id).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ...slurmvocab import ENDING, PENDING, RUNNING, AccountedJob, ListedJob
from .board import Outcome, active_words, ended_why

IN_QUEUE = PENDING | RUNNING | ENDING
FAILED = frozenset({"FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED"})
MAX_ARRAY_TASK = 10_000_000  # a task number past this is not read (Slurm's MaxArraySize is at most 4,000,001)
COUNTS = ("waiting", "running", "completed", "failed", "timeout", "cancelled", "other")


def array_ranges(job_id: str) -> tuple[str, list[tuple[int, int, int]]] | None:
    """A listed id of an array's task(s) -> (the array's job id, its tasks as (first, last) ranges); None for any
    other job.  Ranges, never lists: a site's MaxArraySize may be millions.

    '178_3' -> ('178', [(3, 3, 1)]); '178_[1-5%2]' -> ('178', [(1, 5, 1)]); '178_[0,4-8:2]' -> ('178', [(0, 0, 1),
    (4, 8, 2)]): (first, last, step).
    """
    found = re.fullmatch(r"([0-9]+)_(?:([0-9]+)|\[([0-9,:-]{1,65536})(?:%[0-9]+)?\])", job_id)
    if found is None:
        return None
    array, single, ranges = found.groups()
    if single is not None:
        return array, [(int(single), int(single), 1)]
    spans = []
    for part in ranges.split(","):
        span, _, step = part.partition(":")
        first, _, last = span.partition("-")
        if not first.isdigit() or (last and not last.isdigit()) or (step and not step.isdigit()):
            return None
        low, high, every = int(first), int(last or first), int(step or 1)
        if high < low or high > MAX_ARRAY_TASK or every < 1:
            return None
        spans.append((low, high, every))
    return array, spans


def array_tasks(job_id: str) -> tuple[str, list[int]] | None:
    """array_ranges with the tasks listed one by one (for small arrays and tests)."""
    found = array_ranges(job_id)
    return (
        None if found is None else (found[0], [t for low, high, step in found[1] for t in range(low, high + 1, step)])
    )


def array_id(job_id: str) -> str:
    """The array's job id of a listed task id ("178_3", "178_[1-5]" -> "178"); "" for any other job (cheap: no
    parsing, for grouping a whole listing)."""
    head, underscore, _ = job_id.partition("_")
    return head if underscore else ""


@dataclass(frozen=True)
class TaskState:
    state: str  # Slurm's word; "" when no listing has it
    listed: ListedJob | None = None
    accounted: AccountedJob | None = None

    @property
    def active(self) -> bool:
        return self.state in IN_QUEUE or self.state == ""

    @property
    def elapsed(self) -> str:
        job = self.listed or self.accounted
        return job.elapsed if job is not None else ""


def task_states(
    array_id: str, tasks: int, listed: list[ListedJob], accounted: list[AccountedJob], settled: bool = False
) -> list[TaskState]:
    """Each task's state, task 0 first; `settled`: the sweep was submitted long enough ago that every listing
    since shows it (then a task no listing has, while squeue lists none of the sweep's, was cancelled waiting)."""
    states = [TaskState("")] * tasks
    queued = False
    for source in (accounted, listed):  # squeue's fresher word last: it wins
        for job in source:
            found = array_ranges(job.job_id)
            if found is None or found[0] != array_id:
                continue
            queued = queued or (source is listed and job.state in IN_QUEUE)
            single = "[" not in job.job_id
            for low, high, step in found[1]:
                for task in range(low, min(high, tasks - 1) + 1, step):  # never past the sweep's own tasks
                    if source is listed:
                        states[task] = TaskState(job.state, job if single else None, states[task].accounted)
                    else:
                        states[task] = TaskState(job.state, None, job if single else None)
    if settled and not queued:
        states = [state if state.state else TaskState("CANCELLED") for state in states]
    return states


def bucket(state: str) -> str:
    if state in PENDING or state == "":
        return "waiting"
    if state in RUNNING | ENDING:
        return "running"
    if state == "COMPLETED":
        return "completed"
    if state in FAILED:
        return "failed"
    if state == "TIMEOUT":
        return "timeout"
    if state == "CANCELLED":
        return "cancelled"
    return "other"


def counts(states: list[TaskState]) -> dict[str, int]:
    found = dict.fromkeys(COUNTS, 0)
    for state in states:
        found[bucket(state.state)] += 1
    return found


_WORDS = {"timeout": "reached the time limit"}


def counts_words(tally: dict[str, int]) -> str:
    """'6 tasks: 2 running, 1 waiting, 2 completed, 1 failed.'"""
    total = sum(tally.values())
    parts = [f"{tally[k]} {_WORDS.get(k, k)}" for k in ("running", "waiting", *COUNTS[2:]) if tally.get(k)]
    return f"{total} task{'s' if total != 1 else ''}: " + ", ".join(parts) + "."


def read_results(text: str) -> dict:
    """A task's results file -> {"results": {...}, "error": "", "failed": ""} (a line that does not read says so)."""
    try:
        line = json.loads(text.split("\n", 1)[0]) if text.strip() else {}
    except (ValueError, RecursionError):
        return {"results": {}, "error": "its results file does not read as JSON", "failed": ""}
    if not isinstance(line, dict):
        return {"results": {}, "error": "its results file does not read as JSON", "failed": ""}
    results = line.get("results") if isinstance(line.get("results"), dict) else {}
    scalars = {str(k): v for k, v in results.items() if v is None or isinstance(v, (bool, int, float, str))}
    return {"results": scalars, "error": str(line.get("error", ""))[:300], "failed": str(line.get("failed", ""))[:500]}


def objective_of(objective: str, results: list[dict]) -> str:
    """The result that ranks tasks: the sweep's, else the first a task recorded."""
    if objective:
        return objective
    return next((next(iter(r)) for r in results if r), "")


def best_task(values: list[tuple[int, object]], best: str) -> int | None:
    """The task whose number is highest (best "max") or lowest; None when no task has a number."""
    numbers = [(v, task) for task, v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not numbers:
        return None
    sign = 1 if best == "max" else -1
    return max(numbers, key=lambda pair: (sign * pair[0], -pair[1]))[1]  # a tie: the first task


def task_row(task: int, array_id: str, point: dict, state: TaskState, files: dict) -> dict:
    """One line of the sweep's table (files: this task's output, log and read results)."""
    read = files["results"]
    if state.active:
        words = active_words(state.listed, None) if state.listed is not None else "Waiting in the queue."
        why = ""
    else:
        outcome = Outcome(error=read["failed"]) if read["failed"] else Outcome()
        entry = state.accounted
        why = ended_why(
            state.state, entry.exit_code if entry else "", entry.limit if entry else "", "notebook", outcome, True
        )
        words = ""
    return {
        "task": task,
        "job_id": f"{array_id}_{task}",
        "parameters": point,
        "state": state.state or "PENDING",
        "active": state.active,
        "words": words,
        "why": why,
        "elapsed": state.elapsed,
        "results": read["results"],
        "results_error": read["error"],
        "output": files["output"],
        "log": files["log"],
        "can_cancel": state.active,
    }


def ended_words(tally: dict[str, int], objective: str, best: str, best_row: dict | None, varied: list[str]) -> str:
    """How a sweep ended, with its best result: '6 tasks: 5 completed, 1 failed; best accuracy 0.95 (task 3:
    learning_rate=0.01, batch_size=64).'"""
    words = counts_words(tally)
    if best_row is None or objective not in best_row["results"]:
        return words
    chosen = ", ".join(f"{name}={best_row['parameters'][name]}" for name in varied if name in best_row["parameters"])
    value = best_row["results"][objective]
    shown = f"{value:.6g}" if isinstance(value, float) else str(value)
    where = f"task {best_row['task']}" + (f": {chosen}" if chosen else "")
    lowest = " (lowest)" if best == "min" else ""
    return words[:-1] + f"; best {objective}{lowest} {shown} ({where})."

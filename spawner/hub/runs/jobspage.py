"""One page of the jobs panel's rows: what of a user's accounting a listing reads (pure; hub side).

A user's accounting of `runs.history_days` may hold tens of thousands of jobs
(20,705 rows took the hub 0.36-1.21 s a request to build in full).  A page
builds rows for the jobs it can show and no more: every job still in the
queue, and of the finished ones the newest that can reach the page (the
page's end, plus as many as the queue and the hub's runs could push past it).
The rest are counted, never built.  A sweep's tasks are said in its one row
(runs/sweeps.py), so they are set apart first.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from ...slurmvocab import ENDING, PENDING, RUNNING, AccountedJob
from .board import job_order
from .sweepboard import array_id

DEFAULT_LIMIT = 100  # rows a page holds unless the caller asks for fewer or more
MAX_REACH = 5000  # rows a listing builds at most (offset + limit): a page far down costs no more than this
MAX_LIMIT = 500
IN_QUEUE = PENDING | RUNNING | ENDING


@dataclass(frozen=True)
class Window:
    accounted: list[AccountedJob]  # the entries the page's rows are built from
    left_out: int  # finished jobs counted but not built: the listing's total is the rows built plus these


def page_bounds(limit: str, offset: str) -> tuple[int, int]:
    """?limit=&offset= -> (limit, offset); ValueError with words for anything else."""
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    if not offset.isdigit() or len(offset) > 9 or int(offset) + int(limit) > MAX_REACH:
        raise ValueError(
            f"offset must be a whole number (0 for the first page), offset + limit at most {MAX_REACH}: "
            "older jobs are in Slurm's accounting (sacct)."
        )
    return int(limit), int(offset)


def window(accounted: list[AccountedJob], sweeps: set[str], known: set[str], reach: int) -> Window:
    """The accounting entries a page reaching `reach` rows needs: every one in a queue state, and the newest
    `reach` + len(known) finished ones that are not tasks of `sweeps` (`known`: the ids squeue and the hub's
    runs give rows of their own, which may push finished jobs down the list)."""
    queued, finished = [], []
    for job in accounted:
        if array_id(job.job_id) in sweeps:
            continue
        (queued if job.state in IN_QUEUE else finished).append(job)
    newest = heapq.nsmallest(reach + len(known), finished, key=lambda job: job_order(job.job_id))
    kept = {job.job_id for job in newest}
    left_out = sum(1 for job in finished if job.job_id not in kept and job.job_id not in known)
    return Window(queued + newest, left_out)


def page(rows: list[dict], limit: int, offset: int, left_out: int) -> dict:
    """The page of the built rows, and how many there are in all."""
    return {"jobs": rows[offset : offset + limit], "total": len(rows) + left_out, "limit": limit, "offset": offset}

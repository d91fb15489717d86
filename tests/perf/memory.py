"""What a session's processes hold in memory, idle: RSS and PSS summed over a set of processes.

RSS counts a page shared by two processes twice (the session's keeper and the
server it forked share their interpreter's pages); PSS splits it between them.
Both are printed.  Read as root (smaps of another account's processes).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psutil

MiB = 1024 * 1024


# A process may end between being listed and being read (a kernel's helper, a sudo, a session's keeper): each
# read below skips it, and no benchmark stops for it (one crashed with NoSuchProcess in one run of two).  Reading
# another account's environment needs root; without it a process is skipped, never an error.
GONE = (psutil.NoSuchProcess, psutil.AccessDenied)


def job_pids(user: str, job_id: str) -> list[int]:
    """The processes of `user` that run in Slurm job `job_id` (Slurm puts SLURM_JOB_ID in their environment)."""
    pids = []
    for proc in psutil.process_iter(["username"]):
        try:
            if proc.info["username"] == user and proc.environ().get("SLURM_JOB_ID") == job_id:
                pids.append(proc.pid)
        except GONE:
            continue
    return sorted(pids)


def tree(pid: int) -> list[psutil.Process]:
    """`pid` and its descendants now ([] when `pid` has ended)."""
    try:
        top = psutil.Process(pid)
        return [top, *top.children(recursive=True)]
    except GONE:
        return []


def user_tree_pids(pid: int, user: str) -> list[int]:
    """`pid` and its descendants that run as `user` (not sudo and its monitor, which run as root)."""
    found = []
    for proc in tree(pid):
        try:
            if proc.username() == user:
                found.append(proc.pid)
        except GONE:
            continue
    return sorted(found)


def descendants(pid: int) -> int:
    """How many processes run under `pid` now (0 when it has ended)."""
    return max(len(tree(pid)) - 1, 0)


def footprint(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) in bytes, summed over `pids` (one that ended meanwhile counts 0)."""
    rss = pss = 0
    for pid in pids:
        try:
            info = psutil.Process(pid).memory_full_info()
        except GONE:
            continue
        rss, pss = rss + info.rss, pss + info.pss
    return rss, pss


def steady(readings: list[tuple[list[int], int]], tolerance: float = 0.01) -> bool:
    """True once the last two readings (pids, RSS) have the same processes and RSS within `tolerance`."""
    if len(readings) < 2:
        return False
    (pids_a, rss_a), (pids_b, rss_b) = readings[-2:]
    return pids_a == pids_b and abs(rss_b - rss_a) <= tolerance * max(rss_a, 1)


def idle_footprint(pids_now: Callable[[], list[int]], timeout: float = 30) -> tuple[int, int, int]:
    """(RSS, PSS, process count) once the processes `pids_now` names hold still (every 0.5 s, `timeout` at most)."""
    readings: list[tuple[list[int], int]] = []
    started = time.monotonic()
    while not steady(readings) and time.monotonic() - started < timeout:
        if readings:
            time.sleep(0.5)
        pids = pids_now()
        readings.append((pids, footprint(pids)[0]))
    pids = readings[-1][0]
    rss, pss = footprint(pids)
    return rss, pss, len(pids)

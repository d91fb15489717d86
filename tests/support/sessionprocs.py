"""A session job's own processes on the dev cluster's (local) nodes, as root sees them in /proc.

The batch step is dsportal-singleuser, the session's port keeper
(spawner/jupyter/session/keeper.py); its forked child that holds the session's
listening socket is the Jupyter server.  Tests kill or signal it to play a
server that dies while it starts.
"""

from __future__ import annotations

import time

import psutil

ENTRY = "dsportal-singleuser"


def _of_job(process: psutil.Process, job_id: str) -> bool:
    try:
        return ENTRY in " ".join(process.cmdline()) and process.environ().get("SLURM_JOB_ID") == job_id
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def session_server(job_id: str) -> int | None:
    """The pid of job `job_id`'s Jupyter server once the keeper has forked it (None before)."""
    for keeper in psutil.process_iter():
        if not _of_job(keeper, job_id):
            continue
        try:
            if _of_job(keeper.parent(), job_id):
                continue  # a child of the keeper, not the keeper
            for child in keeper.children():
                # the server holds the session's socket from the fork on (the keeper binds it before forking)
                if _of_job(child, job_id) and any(c.status == psutil.CONN_LISTEN for c in child.net_connections()):
                    return child.pid
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return None


def wait_for_server(job_id: str, timeout: float = 60.0) -> int:
    """Poll (every 20 ms: the server loads JupyterLab for seconds, and a test acts while it loads) for the server."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = session_server(job_id)
        if pid:
            return pid
        time.sleep(0.02)
    raise AssertionError(f"job {job_id}'s Jupyter server did not appear within {timeout} s")

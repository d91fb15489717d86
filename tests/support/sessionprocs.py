"""A session job's own processes on the dev cluster's nodes, as root sees them in /proc.

The batch step is dsportal-singleuser, the session's port keeper
(spawner/jupyter/session/keeper.py); its forked child that holds the session's
listening socket is the Jupyter server.  Tests kill or signal it to play a
server that dies while it starts.

The nodes share this machine's processes (one /proc) but not its network: a
process's sockets are in its node's tables, /proc/PID/net/tcp, which psutil's
net_connections (the reader's own /proc/net/tcp) does not read.
"""

from __future__ import annotations

import os
import time

import psutil

ENTRY = "dsportal-singleuser"


def _of_job(process: psutil.Process, job_id: str) -> bool:
    try:
        return ENTRY in " ".join(process.cmdline()) and process.environ().get("SLURM_JOB_ID") == job_id
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def listens(pid: int) -> bool:
    """Process `pid` holds a listening TCP socket, in the tables of its own host's network."""
    try:
        held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        for table in ("tcp", "tcp6"):
            with open(f"/proc/{pid}/net/{table}") as f:
                for line in f.read().splitlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A" and f"socket:[{fields[9]}]" in held:
                        return True
    except OSError:  # it ended meanwhile
        return False
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
                if _of_job(child, job_id) and listens(child.pid):
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

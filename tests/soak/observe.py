"""What the soak reads of the dev cluster: Slurm's queue, the hub's sessions, the sessions' tokens, answers' words.

The parsers are pure (tests/unit/test_soak.py); the readers below them run
squeue, ask the hub's admin API or read /proc as root.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from .model import HubMemory, HubServer, HubView, SlurmJob

# no field a user controls before the last: the soak's own users never rename their jobs, and only theirs are listed
SQUEUE_FORMAT = "%i|%u|%T|%b|%j"
_GPUS = re.compile(r"gpu(?::[^:,]+)?:(\d+)")
_LOGIN_ERROR = re.compile(r'class="login_error">([^<]*)<')
TOKEN_VARIABLE = "JUPYTERHUB_API_TOKEN"
HUB_API_PORT = 8081  # the hub's own server (the proxy's is 8000): its process is the hub's
_LISTENER = re.compile(r"pid=([0-9]+)")


def parse_squeue(text: str) -> list[SlurmJob]:
    """squeue -h -o SQUEUE_FORMAT -> its jobs."""
    jobs = []
    for line in text.splitlines():
        parts = line.split("|", 4)
        if len(parts) != 5:
            continue
        job_id, user, state, tres, name = parts
        match = _GPUS.search(tres)
        jobs.append(SlurmJob(job_id, user, state, int(match.group(1)) if match else 0, name))
    return jobs


def parse_hub(users: list, names: set[str]) -> HubView:
    """GET /hub/api/users?include_stopped_servers=1 (an admin's answer, with each server's saved state) -> what the
    hub holds of the users `names`: their sessions, and their runs' job ids (kept in the unnamed session's state)."""
    servers, runs = [], set()
    for user in users:
        if not isinstance(user, dict) or user.get("name") not in names:
            continue
        for server, model in (user.get("servers") or {}).items():
            state = model.get("state") or {}
            job_id = str(state.get("job_id") or "")
            servers.append(
                HubServer(user["name"], server, job_id, bool(state.get("stopping")), bool(model.get("ready")))
            )
            runs.update(str(r["job_id"]) for r in state.get("runs") or [] if isinstance(r, dict) and r.get("job_id"))
    return HubView(tuple(servers), frozenset(runs))


def parse_environ(raw: bytes) -> dict[str, str]:
    """/proc/PID/environ -> its variables."""
    pairs = (item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
    return dict(pairs)


def message_of(body) -> str:
    """The words of an API answer: JupyterHub's and the portal's errors say them in "message"."""
    message = body.get("message") if isinstance(body, dict) else None
    return message.strip() if isinstance(message, str) else ""


def login_words(page: str) -> str:
    """The error the login page shows ("" if none)."""
    match = _LOGIN_ERROR.search(page)
    return match.group(1).strip() if match else ""


def history_entries(answer: dict) -> tuple[tuple[str, float | None], ...]:
    """GET /hub/api/dsportal/session's history -> (job id, when it ended) newest first; the hub writes the end in
    its local time to the minute ("2026-11-25T06:17"), None if it cannot be read."""
    entries = []
    for entry in answer.get("history") or []:
        if not isinstance(entry, dict) or not entry.get("job_id"):
            continue
        try:
            ended = time.mktime(time.strptime(str(entry.get("ended", ""))[:16], "%Y-%m-%dT%H:%M"))
        except ValueError:
            ended = None
        entries.append((str(entry["job_id"]), ended))
    return tuple(entries)


# --- readers -----------------------------------------------------------------------------------------------------


def squeue(users: list[str]) -> list[SlurmJob]:
    """The users' jobs in Slurm now (an OSError or CalledProcessError when slurmctld does not answer)."""
    out = subprocess.run(
        ["squeue", "-h", "-u", ",".join(users), "-o", SQUEUE_FORMAT],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return parse_squeue(out.stdout)


def session_tokens(uids: dict[int, str]) -> list[tuple[str, str, str, str]]:
    """(token, user, server, job id) of every process of these users that holds a session's API token (as root:
    /proc hides other users' processes from everyone else)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            user = uids.get(entry.stat().st_uid)
            if user is None:
                continue
            env = parse_environ((entry / "environ").read_bytes())
        except OSError:  # it ended meanwhile
            continue
        token = env.get(TOKEN_VARIABLE, "")
        if token and env.get("SLURM_JOB_ID"):
            found.append(
                (token, env.get("JUPYTERHUB_USER", user), env.get("JUPYTERHUB_SERVER_NAME", ""), env["SLURM_JOB_ID"])
            )
    return found


def hub_memory() -> HubMemory | None:
    """The hub's process (the one listening on its API port) and its resident memory now; None while none listens."""
    out = subprocess.run(
        ["ss", "-Hltnp", f"sport = :{HUB_API_PORT}"], capture_output=True, text=True, timeout=10, check=False
    ).stdout
    match = _LISTENER.search(out)
    if match is None:
        return None
    try:
        with open(f"/proc/{match.group(1)}/status") as status:
            rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):  # it ended meanwhile
        return None
    return HubMemory(time.time(), int(match.group(1)), rss)

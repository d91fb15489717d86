"""Debian's supervisord owns the dev cluster's daemons, each in the foreground.

A supervisor holds each daemon as its own child, so stopping one never hits
an unrelated process that reused a stale pid (what pid files allow), and its
state and pid come from the supervisor, not from a file.  Every program has
autostart=false: `up` starts them in order, each after the one it needs
answers, and autorestart=false: a daemon that dies stays dead, as the
outage tests expect.
"""

from __future__ import annotations

import os
import pwd
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .common import LOGS, STATE, ClusterError, run, say, write_if_changed

CONF = STATE / "supervisord.conf"
SOCKET = Path("/run/dsportal-dev-supervisor.sock")
PIDFILE = Path("/run/dsportal-dev-supervisord.pid")
SUPERVISORD = "/usr/bin/supervisord"
SUPERVISORCTL = "/usr/bin/supervisorctl"


@dataclass(frozen=True)
class Program:
    name: str
    argv: list[str]
    port: str  # what `status` shows
    user: str = "root"
    directory: str = "/"
    environment: dict[str, str] | None = None
    stopwait: int = 20
    umask: str = "027"
    # supervisord stops higher numbers first: a store its clients write to (MariaDB under slurmdbd,
    # slurmdbd under slurmctld) gets a low one, so it stops last; None: supervisord's default (999)
    priority: int | None = None
    # the account the daemon switches to by itself once started (exim drops root after binding port 25),
    # which its process then shows; None: `user`
    runs_as: str | None = None
    # the command line the process shows once started, where `argv` is a wrapper that execs it (a node's slurmd
    # through deploy/dev/hosts.py's onhost); None: `argv`
    shows: list[str] | None = None


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(programs: list[Program]) -> str:
    """supervisord.conf: a private socket, logs under LOGS, one [program:x] per daemon."""
    head = f"""\
; DS Portal dev cluster (written by deploy/devcluster)
[unix_http_server]
file={SOCKET}
chmod=0700

[supervisord]
logfile={LOGS}/supervisord.log
pidfile={PIDFILE}
childlogdir={LOGS}
umask=027

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{SOCKET}
"""
    blocks = [head]
    for p in programs:
        env = ",".join(f"{k}={_quote(v)}" for k, v in (p.environment or {}).items())
        extra = [f"environment={env}"] if env else []
        extra += [f"priority={p.priority}"] if p.priority is not None else []
        optional = "\n".join(extra)
        blocks.append(f"""\
[program:{p.name}]
command={" ".join(p.argv)}
user={p.user}
directory={p.directory}
umask={p.umask}
autostart=false
autorestart=false
startsecs=1
stopsignal=TERM
stopwaitsecs={p.stopwait}
redirect_stderr=true
stdout_logfile={LOGS}/{p.name}.out
stdout_logfile_maxbytes=10MB
{optional}
""")
    return "\n".join(blocks)


def ctl(*args: str, timeout: float = 120, check: bool = True):
    return run([SUPERVISORCTL, "-c", str(CONF), *args], timeout=timeout, check=check)


def running() -> bool:
    return SOCKET.exists() and ctl("pid", check=False).stdout.strip().isdigit()


def launched_as(argv: list[str], cmdline: list[str]) -> bool:
    """`cmdline` is the process `argv` started, also through a script's interpreter (node, python)."""
    if len(cmdline) < len(argv) or cmdline[len(cmdline) - len(argv) + 1 :] != argv[1:]:
        return False
    head = cmdline[len(cmdline) - len(argv)]
    return head == argv[0] or os.path.basename(head) == os.path.basename(argv[0])


def orphans(programs: list[Program]) -> list[tuple[Program, int]]:
    """Processes of these very command lines and users still running without their supervisord.

    A supervisord that crashed (or was killed) leaves its children running:
    e.g. the proxy still holds port 8000, and a new one could not start.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0")[:-1]]
            uid = entry.stat().st_uid
        except OSError:
            continue
        for p in programs:
            if cmdline and launched_as(p.shows or p.argv, cmdline) and uid == pwd.getpwnam(p.runs_as or p.user).pw_uid:
                found.append((p, int(entry.name)))
    return found


def stop_orphans(programs: list[Program]) -> None:
    left = orphans(programs)
    for p, pid in left:
        say(f"{p.name} (pid {pid}) outlived the supervisord that started it: stopping it to start it afresh")
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for _, pid in left:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)


def ensure(programs: list[Program]) -> None:
    """supervisord runs with this configuration (changed programs are restarted by `update`)."""
    changed = write_if_changed(CONF, render(programs), mode=0o600)
    if not running():
        stop_orphans(programs)
        run([SUPERVISORD, "-c", str(CONF)], timeout=30)
        deadline = time.monotonic() + 20
        while not running():
            if time.monotonic() > deadline:
                raise ClusterError(f"supervisord did not start; see {LOGS / 'supervisord.log'}")
            time.sleep(0.2)
    elif changed:
        ctl("reread")
        ctl("update")


def states() -> dict[str, tuple[str, int | None]]:
    """name -> (RUNNING / STOPPED / EXITED / ..., pid or None)."""
    if not running():
        return {}
    out = ctl("status", check=False).stdout
    result = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        pid = int(parts[3].rstrip(",")) if len(parts) > 3 and parts[2] == "pid" else None
        result[parts[0]] = (parts[1], pid)
    return result


def start(name: str) -> None:
    if states().get(name, ("",))[0] != "RUNNING":
        ctl("start", name)


def stop(*names: str) -> None:
    if running():
        ctl("stop", *names, check=False)


def shutdown(timeout: float = 90) -> None:
    """Stop every program and supervisord, and return once supervisord is gone.

    `supervisorctl shutdown` only asks: supervisord then stops each program in
    turn (up to its stopwaitsecs).  A caller that went on at once (`down`, then
    `up`) found the daemons still running beside a new supervisord.
    """
    if not running():
        return
    pid = int(PIDFILE.read_text().strip()) if PIDFILE.exists() else None
    ctl("shutdown", check=False)
    deadline = time.monotonic() + timeout
    while pid and Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid and Path(f"/proc/{pid}").exists():
        raise ClusterError(f"supervisord (pid {pid}) did not stop within {timeout:g} s; see {LOGS / 'supervisord.log'}")

"""What every part of the dev cluster uses: its paths, running a command, waiting with a deadline."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from . import demo

PREFIX = Path(os.environ.get("DSPORTAL_PREFIX", "/opt/dsportal"))
VENV = PREFIX / "venv"
STATE = Path("/var/lib/dsportal-dev")
LOGS = Path("/var/log/dsportal-dev")
ETC = Path("/etc/dsportal")
HUB_STATE = Path("/var/lib/dsportal")
REGISTRY_STATE = Path("/var/lib/dsportal-registry")  # the registry account's own (STATE is root's, 0750)
SPOOL = Path("/var/spool/dsportal-dev")  # Slurm's: jobs run their scripts from here as their users (0755)
CACHE = Path("/var/cache/dsportal-dev")  # downloads kept by `reset` (the container image's base)
BUILT = CACHE / "built"  # what `up` built from locked inputs, kept by `reset` (builds.py): restored, not rebuilt
# two GPU nodes, one CPU-only, one whose GPUs are MIG instances (deploy/dev/slurmconf.py)
NODES = {"node001": 6821, "node002": 6822, "node003": 6823, "node004": 6824}
SLURMCTLD_PORT = 6817
SLURMDBD_PORT = 6819
CLUSTER_NAME = "dsportal"  # slurm.conf's ClusterName, registered in the accounting database
PRIVATE_DATA = "jobs,usage,users,accounts"  # slurm.conf's and slurmdbd.conf's: each user sees only their own
LDAP_URI = "ldap://127.0.0.1:389/"
HUB_URL = "https://localhost:8000"
SERVICE_USER = "dsportal"  # the hub's and the proxy's unprivileged service account
# the demo people's unix side (declared in demo.py): group -> gid, and user -> (uid, the unix groups it is in)
GROUPS = demo.unix_groups()
USERS = {u.name: (u.uid, [g for g in u.groups if g in GROUPS]) for u in demo.USERS}


class ClusterError(RuntimeError):
    """A step failed; the message says what to do."""


def say(message: str) -> None:
    print(f"devcluster: {message}", flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    """`up` prints each step with its seconds: where a slow start spends its time."""
    started = time.monotonic()
    yield
    print(f"devcluster: step {name}: {time.monotonic() - started:.1f} s", flush=True)


def run(argv: list[str], timeout: float = 60, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """`argv` run, its output captured; a failure raises ClusterError, or with check=False is returned, a
    program that is not installed (a new machine's `reset`: no iptables, no Slurm yet) as exit status 127."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    except FileNotFoundError as e:
        if check:
            raise ClusterError(f"{argv[0]} is not installed here ({e.strerror}): run `deploy/devcluster up`") from None
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: not installed")
    if check and result.returncode != 0:
        raise ClusterError(
            f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}"
        )
    return result


def write_if_changed(path: Path, text: str, mode: int = 0o644, owner: str = "root") -> bool:
    """Write `text` (created with `mode`, never wider for a moment); True if the file changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        path.chmod(mode)
        shutil.chown(path, owner, owner)
        return False
    tmp = path.with_name(path.name + ".new")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    shutil.chown(tmp, owner, owner)
    os.replace(tmp, path)
    return True


def log_tail(name: str, lines: int = 8) -> str:
    try:
        return "\n".join((LOGS / name).read_text().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_for(check: Callable[[], bool], timeout: float, what: str, log: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    detail = f"; the end of {LOGS / log}:\n{log_tail(log)}" if log else f"; see the logs in {LOGS}"
    raise ClusterError(f"{what} did not happen within {timeout:g} s{detail}")


def listener_of(port: int) -> str:
    """Who listens on TCP `port` ("" if nobody)."""
    return run(["ss", "-H", "-ltnp", f"sport = :{port}"], check=False).stdout.strip()

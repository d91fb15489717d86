"""The machine's side of the dev cluster: node names, unix accounts, demo storage and module."""

from __future__ import annotations

import grp
import pwd
import shutil
from pathlib import Path

from .common import GROUPS, NODES, USERS, run, say, write_if_changed

STORAGE = Path("/mnt/isilon")
MODULEFILES = Path("/opt/modulefiles")


def ensure_hosts() -> None:
    hosts = Path("/etc/hosts")
    text = hosts.read_text()
    missing = [n for n in NODES if not any(n in line.split()[1:] for line in text.splitlines() if line.strip())]
    if missing:
        say(f"making {', '.join(missing)} resolve (/etc/hosts)")
        with hosts.open("a") as f:
            f.write(f"127.0.0.1 {' '.join(missing)}  # DS Portal dev cluster\n")


def ensure_accounts() -> None:
    for group, gid in GROUPS.items():
        try:
            grp.getgrnam(group)
        except KeyError:
            run(["groupadd", "-g", str(gid), group])
    for user, (uid, groups) in USERS.items():
        try:
            pwd.getpwnam(user)
        except KeyError:
            say(f"creating the unix account {user}")
            run(["useradd", "-u", str(uid), "-g", groups[0], "-G", ",".join(groups), "-m", "-s", "/bin/bash", user])
        home = Path(pwd.getpwnam(user).pw_dir)
        home.mkdir(mode=0o750, exist_ok=True)
        shutil.chown(home, user, groups[0])


def ensure_demo_module() -> None:
    """One Lmod module, so module kernels run for real in the dev cluster."""
    write_if_changed(MODULEFILES / "demo" / "1.0.lua",
                     'whatis("DS Portal dev cluster demo module")\nsetenv("DSPORTAL_DEMO", "loaded")\n')


def ensure_storage() -> None:
    datasets = STORAGE / "datasets"
    datasets.mkdir(parents=True, exist_ok=True)
    STORAGE.chmod(0o1777)  # shared: everyone writes, nobody deletes others' files
    datasets.chmod(0o755)
    write_if_changed(datasets / "README.txt",
                     "Shared data sets of the DS Portal dev cluster (stands for the Isilon storage).\n")

"""The machine's side of the dev cluster: node names, unix accounts, demo storage and module."""

from __future__ import annotations

import grp
import pwd
import shutil
from pathlib import Path

from . import hosts
from .common import GROUPS, HUB_STATE, NODES, SERVICE_USER, USERS, ClusterError, run, say, write_if_changed

STORAGE = Path("/mnt/isilon")
MODULEFILES = Path("/opt/modulefiles")
HOSTS_MARK = "# DS Portal dev cluster"  # on each line of /etc/hosts the dev cluster wrote (reset removes them)


def hosts_text(text: str, wanted: list[str], mark: str = HOSTS_MARK) -> str:
    """/etc/hosts with the nodes' `wanted` lines, the rest in its order (pure): unchanged when they are there,
    else an earlier dev cluster's lines naming a node (the loopback's, before separate hosts) replaced.  A line of
    someone else's naming a node: ClusterError (glibc reads the first line that names a host)."""
    lines = text.splitlines()
    marked = [f"{line}  {mark}" for line in wanted]

    def names_a_node(line: str) -> bool:
        return any(n in line.split("#")[0].split()[1:] for n in NODES)

    foreign = [line for line in lines if names_a_node(line) and mark not in line]
    if foreign:
        raise ClusterError(
            f"/etc/hosts names a dev cluster node in a line of its own: {foreign[0]!r}; remove it "
            "(the nodes' addresses are deploy/dev/hosts.py's)"
        )
    ours = [line for line in lines if names_a_node(line)]
    if ours == marked:
        return text
    kept = [line for line in lines if not names_a_node(line)]
    return "\n".join([*kept, *marked]) + "\n"


def ensure_hosts() -> None:
    """Node names resolve to their hosts' addresses (deploy/dev/hosts.py), here and so on every node."""
    path = Path("/etc/hosts")
    text = path.read_text()
    new = hosts_text(text, hosts.hosts_lines())
    if new != text:
        say("making the nodes' names resolve to their addresses (/etc/hosts)")
        path.write_text(new)  # in place: in a container /etc/hosts is a bind mount, which a rename cannot replace


def ensure_accounts() -> None:
    """The demo users: a private group each (gid = uid), members of the portal's groups, homes 0700."""
    for group, gid in GROUPS.items():
        try:
            grp.getgrnam(group)
        except KeyError:
            run(["groupadd", "-g", str(gid), group])
    for user, (uid, groups) in USERS.items():
        try:
            grp.getgrnam(user)
        except KeyError:
            run(["groupadd", "-g", str(uid), user])
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            say(f"creating the unix account {user}")
            run(["useradd", "-u", str(uid), "-g", user, "-G", ",".join(groups), "-m", "-s", "/bin/bash", user])
            entry = pwd.getpwnam(user)
        if entry.pw_gid != uid:  # made by an earlier dev cluster with a shared primary group
            run(["usermod", "-g", user, "-a", "-G", ",".join(groups), user])
        home = Path(entry.pw_dir)
        home.mkdir(mode=0o700, exist_ok=True)
        shutil.chown(home, user, user)
        home.chmod(0o700)


def ensure_service_account() -> None:
    """The hub's and the proxy's account: no login, no password, owns only the hub's state."""
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        say(f"creating the service account {SERVICE_USER}")
        run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--home-dir",
                str(HUB_STATE),
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ]
        )
    HUB_STATE.mkdir(mode=0o700, exist_ok=True)
    HUB_STATE.chmod(0o700)
    run(["chown", "-R", f"{SERVICE_USER}:{SERVICE_USER}", str(HUB_STATE)])
    run(["chmod", "-R", "go-rwx", str(HUB_STATE)])  # the database and cookie secret are the hub's alone


def ensure_sudoers(source: Path) -> None:
    """Install the project's sudoers rule, after visudo has checked it."""
    check = run(["visudo", "-cf", str(source)], check=False)
    if check.returncode != 0:
        raise ClusterError(f"{source} does not parse: {check.stdout.strip()} {check.stderr.strip()}")
    write_if_changed(Path("/etc/sudoers.d/dsportal"), source.read_text(), mode=0o440)


def ensure_demo_module() -> None:
    """One Lmod module, so module kernels run for real in the dev cluster."""
    write_if_changed(
        MODULEFILES / "demo" / "1.0.lua",
        'whatis("DS Portal dev cluster demo module")\nsetenv("DSPORTAL_DEMO", "loaded")\n',
    )


def ensure_storage() -> None:
    datasets = STORAGE / "datasets"
    datasets.mkdir(parents=True, exist_ok=True)
    STORAGE.chmod(0o1777)  # shared: everyone writes, nobody deletes others' files
    datasets.chmod(0o755)
    write_if_changed(
        datasets / "README.txt", "Shared data sets of the DS Portal dev cluster (stands for the Isilon storage).\n"
    )


def ensure_private_processes() -> None:
    """Users see only their own processes (/proc with hidepid), as on a multi-user compute node.

    All the dev cluster's virtual nodes share this machine's kernel: without it,
    any session could list every other session's processes and their arguments.
    """
    options = [line.split()[3] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[1] == "/proc"]
    if not options or "hidepid=invisible" not in options[0].split(","):
        run(["mount", "-o", "remount,hidepid=invisible", "/proc"])

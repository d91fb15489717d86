"""`deploy/devcluster reset`: everything the dev cluster made outside the checkout, gone.

After it, `up` builds the dev cluster as on a machine that never had one,
so a setup step that only works on a warm machine fails at once (CI runs
`reset` before every `test`).  Kept: what was downloaded (Debian's installed
packages and apt's archive, pip's and npm's caches, the container image's
packages in CACHE) and what was built from locked inputs (builds.py: the
venv, code-server, the proxy, the container image; the next `up` checks
each against its lock and installs the portal afresh), so the next `up`
costs about a minute, not a download and a rebuild.
"""

from __future__ import annotations

import grp
import pwd
from pathlib import Path

from . import (
    accounting,
    builds,
    hosts,
    images,
    locks,
    mail,
    nvml,
    platform,
    prometheus,
    registry,
    slurmconf,
    supervisor,
    tls,
)
from .common import (
    CACHE,
    ETC,
    GROUPS,
    HUB_STATE,
    LOGS,
    PREFIX,
    REGISTRY_STATE,
    SERVICE_USER,
    SPOOL,
    STATE,
    USERS,
    run,
    say,
)
from .machine import HOSTS_MARK, MODULEFILES, STORAGE

FOLDERS = [
    STATE,
    SPOOL,
    LOGS,
    ETC,
    HUB_STATE,
    REGISTRY_STATE,
    accounting.DB_DIR,  # the accounting database: `up` starts an empty one
    prometheus.HOME,  # the metrics Prometheus kept
    nvml.READINGS,
    PREFIX,
    images.IMAGES,
    MODULEFILES,
    STORAGE,
    Path("/etc/slurm/slurm.conf"),
    Path("/etc/slurm/gres.conf"),
    slurmconf.CGROUP_CONF,
    slurmconf.GPUS,  # the stand-in GPUs' device nodes
    accounting.SLURMDBD_CONF,
    Path("/etc/sudoers.d/dsportal"),
    nvml.LIBRARY,
    locks.PROXY_LINK,  # to the proxy `up` installed in PREFIX
    tls.SYSTEM_TRUST,
]


def stop_everything() -> None:
    """Sessions' jobs cancelled, every daemon stopped, and no process left of the accounts about to go."""
    if supervisor.running():
        supervisor.stop("jupyterhub", "proxy")
        for user in USERS:  # sessions and anything else the demo users run
            run(["scancel", "--quiet", f"--user={user}"], check=False, timeout=20)
        supervisor.shutdown()
    for account in [*USERS, SERVICE_USER, registry.ACCOUNT]:
        run(["pkill", "-KILL", "-u", account], check=False)


def remove_accounts() -> None:
    for account in [*USERS, SERVICE_USER, registry.ACCOUNT]:
        try:
            pwd.getpwnam(account)
        except KeyError:
            continue
        say(f"removing the account {account}")
        run(["userdel", "--remove", "--force", account], check=False)  # also its home and mail spool
    for group in [*GROUPS, *USERS, SERVICE_USER, registry.ACCOUNT]:
        try:
            grp.getgrnam(group)
        except KeyError:
            continue
        run(["groupdel", group], check=False)


def remove_host_names() -> None:
    etc_hosts = Path("/etc/hosts")
    lines = etc_hosts.read_text().splitlines(keepends=True)
    kept = [line for line in lines if HOSTS_MARK not in line]
    if kept != lines:
        etc_hosts.write_text("".join(kept))


def reset() -> None:
    stop_everything()
    platform.remove()  # the machine's own Slurm programs back (the bound copies stay, in CACHE)
    slurmconf.remove_job_cgroups()
    remove_accounts()  # also the demo users' mailboxes in /var/mail
    mail.restore_debians()  # before STATE goes: it holds Debian's text
    mail.clear_queue()
    builds.keep_prefix_builds()  # before PREFIX goes: the venv, code-server, the proxy
    images.keep_built()
    for path in FOLDERS:
        if path.is_dir() and not path.is_symlink():
            # never through a mount left inside (a release build stopped half-way leaves pip's download cache
            # bound in its root): unmounted first, or refused
            platform.remove_tree(path)
        else:
            path.unlink(missing_ok=True)
    run(["update-ca-certificates", "--fresh"], check=False, timeout=120)  # the dev CA out of the trust store
    run(["ldconfig"], check=False)  # the stand-in NVML library is gone
    remove_host_names()
    hosts.remove()  # after every process of the nodes is gone
    run(["npm", "uninstall", "-g", "--loglevel=error", "configurable-http-proxy"], check=False, timeout=120)
    if "hidepid=invisible" in Path("/proc/mounts").read_text():
        run(["mount", "-o", "remount,hidepid=0", "/proc"], check=False)
    say(
        f"the dev cluster is gone; kept only downloads (apt's, pip's and npm's caches, {CACHE}) "
        "and the builds of locked inputs (the venv, code-server, the proxy, the container image; checked at the next `up`). "
        "`deploy/devcluster up` builds it from nothing."
    )

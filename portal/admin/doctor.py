"""`dsportal doctor`: check a real installation from the head node, each check with OK or what to fix.

Run by an admin (as root, or as the hub's service account).  Every check is a
small function of a `Context`; a check that cannot run says so and counts
as failed, since the point is a portal that works.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from spawner.contract import RUNTIME_COMMANDS
from spawner.slurmvocab import parse_partitions_gres, partitions_gres_argv, user_jobs_argv

from ..huburl import connect_url
from ..ldapclient import Directory, DirectoryUnavailable
from ..settings import PortalSettings
from . import doctorslurm
from .imagesafety import privileged_entries

TIMEOUT = 30


@dataclass(frozen=True)
class Result:
    name: str
    ok: bool
    detail: str  # what was found, or what to fix

    def line(self) -> str:
        return f"{'OK ' if self.ok else 'FIX'}  {self.name}: {self.detail}"

    def as_dict(self) -> dict:
        """For `dsportal doctor --json`: the check's name, "ok" or "fail", and the line's words."""
        return {"name": self.name, "status": "ok" if self.ok else "fail", "message": self.detail}


@dataclass
class Context:
    settings: PortalSettings
    service_account: str
    sample_user: str
    run: Callable[[list[str]], subprocess.CompletedProcess]


def run_command(argv: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: not found ({e.strerror})")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]} did not answer within {TIMEOUT} s")


def sample_user(settings: PortalSettings) -> str | None:
    """A member of the first portal users' group, to try the sudo rule and the directory with."""
    for group in settings.slurm.user_groups:
        try:
            members = grp.getgrnam(group).gr_mem
        except KeyError:
            continue
        if members:
            return sorted(members)[0]
    return None


def absolute(command: str) -> str:
    return command if command.startswith("/") else (shutil.which(command) or command)


# --- the checks ----------------------------------------------------------------------
def check_slurm(ctx: Context) -> list[Result]:
    slurm = ctx.settings.slurm
    out = ctx.run(partitions_gres_argv(slurm.sinfo))
    if out.returncode != 0:
        return [
            Result(
                "slurm",
                False,
                f"{slurm.sinfo} failed: {out.stderr.strip()[:200]}; start slurmctld or "
                "fix slurm.sinfo, and check munge on this host",
            )
        ]
    queue = ctx.run(user_jobs_argv(slurm.squeue, ctx.sample_user))
    results = [
        Result(
            "slurm",
            queue.returncode == 0,
            "sinfo and squeue answer"
            if queue.returncode == 0
            else f"{slurm.squeue} failed: {queue.stderr.strip()[:200]}; fix slurm.squeue",
        )
    ]
    gres = parse_partitions_gres(out.stdout)
    for p in slurm.partitions:
        if p.name not in gres:
            results.append(
                Result(
                    f"partition {p.name}",
                    False,
                    f"Slurm has no partition {p.name!r} (it has "
                    f"{', '.join(sorted(gres)) or 'none'}); fix slurm.partitions",
                )
            )
        elif p.max_gpus == 0:  # a CPU-only partition: its sessions ask for no GPU
            results.append(Result(f"partition {p.name}", True, "CPU only (max_gpus: 0)"))
        elif "gpu" not in gres[p.name]:
            results.append(
                Result(
                    f"partition {p.name}",
                    False,
                    "its nodes have no gpu GRES; set Gres=gpu:N on the "
                    "nodes (slurm.conf) and GresTypes=gpu, with gres.conf on each node, or max_gpus: 0 for a "
                    "CPU-only partition",
                )
            )
        else:
            results.append(Result(f"partition {p.name}", True, f"GRES {gres[p.name]}"))
    return results


def check_sudo(ctx: Context) -> list[Result]:
    slurm, who = ctx.settings.slurm, ctx.service_account
    as_admin = ["-U", who] if os.geteuid() == 0 else []
    if not as_admin and os.environ.get("USER", "") != who:
        return [Result("sudo rule", False, f"run `dsportal doctor` as root or as {who} to check its sudo rule")]
    results = []
    for command in (absolute(slurm.sbatch), absolute(slurm.scancel)):
        ok = ctx.run([slurm.sudo, "-n", "-l", *as_admin, "-u", ctx.sample_user, command]).returncode == 0
        results.append(
            Result(
                f"sudo {Path(command).name} as {ctx.sample_user}",
                ok,
                "allowed"
                if ok
                else f"{who} may not run {command} as {ctx.sample_user}; install "
                "deploy/sudoers.d/dsportal (with your group and paths) and run visudo -c",
            )
        )
    as_root = ctx.run([slurm.sudo, "-n", "-l", *as_admin, "-u", "root", absolute(slurm.sbatch)]).returncode == 0
    results.append(
        Result(
            "sudo as root",
            not as_root,
            "refused"
            if not as_root
            else f"{who} may run sbatch as root; limit the sudoers rule's runas list to the portal "
            "users' group with !root",
        )
    )
    return results


def check_extend_helper(ctx: Context) -> list[Result]:
    """With slurm.allow_extend: the helper is root's alone, and the service account may run it with sudo."""
    slurm, who = ctx.settings.slurm, ctx.service_account
    if not slurm.allow_extend:
        return []
    helper = Path(slurm.extend_command)
    try:
        info = helper.stat()
    except OSError:
        return [
            Result(
                "extension helper",
                False,
                f"{helper} is missing; install DS Portal there or fix "
                "slurm.extend_command (or set slurm.allow_extend: false)",
            )
        ]
    if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return [
            Result(
                "extension helper",
                False,
                f"{helper} runs as root and must be root's alone: chown root {helper}; chmod go-w {helper}",
            )
        ]
    as_admin = ["-U", who] if os.geteuid() == 0 else []
    allowed = ctx.run([slurm.sudo, "-n", "-l", *as_admin, "-u", "root", str(helper)]).returncode == 0
    return [
        Result(
            "extension helper",
            allowed,
            f"{who} may run {helper} as root"
            if allowed
            else f"{who} may not run {helper} as root; add the extension line of deploy/sudoers.d/dsportal",
        )
    ]


def check_environment(ctx: Context) -> list[Result]:
    prefix = Path(ctx.settings.environment.prefix)
    entry = prefix / "bin" / "dsportal-singleuser"
    if not os.access(entry, os.X_OK):
        return [
            Result(
                "session environment",
                False,
                f"{entry} is missing; install DS Portal into "
                f"{prefix} on a filesystem every compute node mounts, or fix environment.prefix",
            )
        ]
    writable = [
        str(p)
        for p in [prefix, prefix / "bin", *prefix.glob("lib/python3*/site-packages")]
        if p.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ]
    if writable:
        return [
            Result(
                "session environment",
                False,
                f"{', '.join(writable)} can be written by other accounts, "
                "who could change every user's session; chmod go-w them",
            )
        ]
    return [Result("session environment", True, f"{prefix} exists and only its owner can change it")]


def image_privileges(image: str) -> list[str]:
    """A directory image's setuid/setgid files and device nodes (a few; [] for a file image such as a SIF)."""
    return privileged_entries(Path(image), limit=3) if os.path.isdir(image) else []


def container_images(
    settings: PortalSettings, which=shutil.which, exists=os.path.exists, privileges=image_privileges
) -> list[Result]:
    """Each container kernel: which runtime runs which image, or what is missing on this machine."""
    results = []
    for kernel in settings.kernels.containers:
        runtime = settings.kernels.runtime_of(kernel)
        command = RUNTIME_COMMANDS[runtime]
        path = which(command)
        name = f"kernel {kernel.name}"
        if path is None:
            results.append(
                Result(
                    name,
                    False,
                    f"{runtime} ({command}) is not installed here; install it on this "
                    "machine and the compute nodes, or change kernels.containers[].runtime",
                )
            )
        elif not exists(kernel.image):
            results.append(
                Result(
                    name,
                    False,
                    f"image {kernel.image} not found; pull it (dsportal images pull) "
                    "onto storage every compute node mounts",
                )
            )
        elif found := privileges(kernel.image):
            results.append(
                Result(
                    name,
                    False,
                    f"image {kernel.image} holds setuid/setgid programs or device nodes "
                    f"({'; '.join(found)} ...): any user could become root through them on storage "
                    "without nosuid. Pull it again with dsportal images pull, which removes them",
                )
            )
        else:
            results.append(Result(name, True, f"{runtime} ({path}) runs {kernel.image}"))
    return results


def check_images(ctx: Context) -> list[Result]:
    return container_images(ctx.settings)


def check_connect_url(ctx: Context) -> list[Result]:
    url = connect_url(ctx.settings.hub)
    host = urlparse(url).hostname or ""
    try:
        socket.getaddrinfo(host, None)
    except OSError as e:
        return [
            Result(
                "hub address",
                False,
                f"{host} (from {url}) does not resolve ({e.strerror}); compute nodes "
                "could not report to the hub: fix hub.internal_connect_url",
            )
        ]
    return [Result("hub address", True, f"{url} resolves")]


def check_ldap(ctx: Context) -> list[Result]:
    ldap = ctx.settings.ldap
    if not ldap.enabled:
        return [Result("ldap", True, "ldap.enabled is false: the hub's own authenticator logs users in")]
    if not ldap.service_dn:
        return [
            Result(
                "ldap",
                False,
                "no ldap.service_dn: users cannot be looked up or refreshed; set service_dn and service_password_file",
            )
        ]
    try:
        found = Directory(ldap).lookup(ctx.sample_user)
    except DirectoryUnavailable as e:
        return [Result("ldap", False, f"no directory server answered ({e}); check ldap.uris, tls and ca_file")]
    except OSError as e:
        return [
            Result(
                "ldap",
                False,
                f"cannot read ldap.service_password_file ({e.strerror}); fix the file or "
                "its owner (the hub's service account, mode 0600)",
            )
        ]
    if found is None:
        return [
            Result(
                "ldap", False, f"the directory has no {ctx.sample_user!r}; check user_search_base or bind_dn_template"
            )
        ]
    return [
        Result(
            "ldap",
            True,
            f"the service account binds and finds {ctx.sample_user} (uidNumber "
            f"{found.uid_number}, groups {', '.join(found.groups) or 'none'})",
        )
    ]


def readable_by(path: str, account: str) -> bool:
    """Whether `account` may read `path` by its owner, group and mode (the doctor runs as root, which reads
    everything, so os.access would answer for root)."""
    try:
        found, entry = os.stat(path), pwd.getpwnam(account)
    except (OSError, KeyError):
        return False
    if found.st_uid == entry.pw_uid:
        return bool(found.st_mode & stat.S_IRUSR)
    if found.st_gid in os.getgrouplist(account, entry.pw_gid):
        return bool(found.st_mode & stat.S_IRGRP)
    return bool(found.st_mode & stat.S_IROTH)


def key_private(path: str, account: str) -> bool:
    """No one but root and `account` may read the key: not everyone, and not a group `account` is not in."""
    found = os.stat(path)
    if found.st_mode & stat.S_IROTH:
        return False
    try:
        entry = pwd.getpwnam(account)
    except KeyError:
        return False
    return not (found.st_mode & stat.S_IRGRP) or found.st_gid in os.getgrouplist(account, entry.pw_gid)


def check_tls_files(ctx: Context) -> list[Result]:
    """The CA files the hub reads, and the proxy's certificate and key: readable by the service account (the
    proxy refuses to start otherwise), and the key by no one else."""
    hub = ctx.settings.hub
    files = [f for f in (ctx.settings.ldap.ca_file, ctx.settings.notify.ca_file, hub.tls_cert, hub.tls_key) if f]
    can_read = (
        (lambda f: readable_by(f, ctx.service_account)) if os.geteuid() == 0 else (lambda f: os.access(f, os.R_OK))
    )
    unreadable = [f for f in files if not can_read(f)]
    if unreadable:
        return [
            Result(
                "tls files",
                False,
                f"{ctx.service_account} cannot read {', '.join(unreadable)}; fix the path, or the owner and mode",
            )
        ]
    if hub.tls_key and not key_private(hub.tls_key, ctx.service_account):
        return [
            Result(
                "tls files",
                False,
                f"hub.tls_key {hub.tls_key} is readable by others than {ctx.service_account}: "
                f"chown {ctx.service_account}: and chmod 0600 it",
            )
        ]
    return [Result("tls files", True, f"{len(files)} file(s) readable by {ctx.service_account}")]


def check_slurm_site(ctx: Context) -> list[Result]:
    """Confinement (cgroups), what PrivateData hides from the hub, the config's GPU types and its account, against
    the site's Slurm."""
    checks = (doctorslurm.cgroups, doctorslurm.privacy, doctorslurm.gpu_types, doctorslurm.accounts)
    return [Result(*finding) for check in checks for finding in check(ctx)]


CHECKS = (
    check_slurm,
    check_slurm_site,
    check_sudo,
    check_extend_helper,
    check_environment,
    check_images,
    check_connect_url,
    check_ldap,
    check_tls_files,
)


def diagnose(ctx: Context) -> list[Result]:
    return [result for check in CHECKS for result in check(ctx)]

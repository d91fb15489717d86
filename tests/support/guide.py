"""The install guide (docs/admins/install.md) run as a site runs it: its command blocks, in order, as root, on a fresh
Debian 12 head node (debootstrap) beside the dev cluster.

The head node is a root of its own, entered with chroot, sharing the machine's network (the head node's): its hub
and proxy listen on ports of their own (8400, 8401, 10.77.0.1:8481) beside the dev cluster's.  What the guide
presupposes of a site, and the steps it leaves to the site, the test stands in for (STAND_INS names each):

- the site's Slurm client and munge: Debian 12's slurm-client in the root, /etc/slurm and munge's socket bound in;
- the site's accounts (nss): the demo users' and groups' lines of /etc/passwd and /etc/group, and /etc/hosts;
- the site's network settings: the machine's CA bundle for pip and npm (as this machine's environment gives it);
- shared storage: /home and /mnt/isilon bound in; the compute nodes run the session environment the dev cluster
  installed at the same path (/opt/dsportal/venv, the same wheel's code), not the root's copy;
- the edits the guide asks for: the admin file (written for this cluster, on the ports above), the sudoers rule's
  group (datasci), the certificate (the dev CA's, for 127.0.0.1), the LDAP service password file;
- systemd, which is not PID 1 here: a `systemctl` function records what the guide asks, and the units' own settings
  start the commands (the account, UMask, the environment files, the capabilities, ExecStartPre then ExecStart).

No file of the machine changes: everything lies under the root or is bound read-only (/home, /mnt/isilon,
/etc/slurm), the root keeps debootstrap's own /dev and gets a proc of its own, and `close` removes the root only
once nothing is mounted under it.  One head node at a time (a lock): a second would unbind the first's folders.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from deploy.dev import platform
from deploy.dev.common import CACHE, GROUPS, STATE, USERS

WORK = STATE / "guide"  # root's (STATE is 0750)
SUITE = "bookworm"
RELEASE_IN_ROOT = Path("/root/release")
CA_IN_ROOT = "/etc/dsportal-test-ca.crt"  # the site's proxy's CA, as this machine's environment names its own
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEMCTL_LOG = "/run/guide-systemctl"


@dataclass
class Block:
    section: str  # the heading it is under ("9. The services")
    text: str


def blocks(markdown: str) -> list[Block]:
    """The guide's command blocks, in order: fenced blocks with no language or `bash`/`sh` (pure)."""
    found, section, inside, lines, language = [], "", False, [], ""
    for line in markdown.splitlines():
        if not inside and line.startswith("## "):
            section = line[3:].strip()
        elif not inside and line.startswith("```"):
            inside, lines, language = True, [], line[3:].strip()
        elif inside and line.startswith("```"):
            inside = False
            if language in ("", "bash", "sh"):
                found.append(Block(section, "\n".join(lines)))
        elif inside:
            lines.append(line)
    return found


def unit_settings(text: str, before: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """A unit's [Service] settings, each key's values in order, read over `before` (a drop-in over its unit): an
    empty value resets the key's list, as systemd's does, but for CapabilityBoundingSet, where it means none (pure)."""
    section, found = "", {k: list(v) for k, v in (before or {}).items()}
    for line in text.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith(("#", ";")):
            key, value = line.split("=", 1)
            found[key] = [] if value == "" and key != "CapabilityBoundingSet" else [*found.get(key, []), value]
    return found


def merged(unit: str, dropins: list[str]) -> dict[str, list[str]]:
    """The unit's settings with its drop-ins' read after them, in order (pure)."""
    settings = unit_settings(unit)
    for text in dropins:
        settings = unit_settings(text, settings)
    return settings


def service_argv(settings: dict[str, list[str]], command: str) -> list[str]:
    """What runs `command` as the unit says: setpriv for the account and the capabilities, then UMask and
    WorkingDirectory; the environment is service_env's (pure)."""
    caps = [c.strip() for v in settings.get("AmbientCapabilities", []) for c in v.split()]
    names = ",".join("+" + c.lower().removeprefix("cap_") for c in caps)
    user, group = settings["User"][-1], settings.get("Group", settings["User"])[-1]
    argv = ["setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups"]
    if caps:
        argv += [f"--inh-caps={names}", f"--ambient-caps={names}"]
    if "CapabilityBoundingSet" in settings:
        argv.append("--bounding-set=-all" + ("," + names if caps else ""))
    if settings.get("NoNewPrivileges", ["no"])[-1] == "yes":
        argv.append("--no-new-privs")
    umask, folder = settings.get("UMask", ["0022"])[-1], settings.get("WorkingDirectory", ["/"])[-1]
    return [*argv, "sh", "-c", f"umask {umask}\ncd {shlex.quote(folder)}\nexec {command}\n"]


def environment_file(text: str) -> dict[str, str]:
    """An EnvironmentFile's variables: KEY=VALUE lines, comments and blank lines skipped (pure)."""
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")) and "=" in line:
            key, value = line.split("=", 1)
            found[key.strip()] = value.strip().strip('"')
    return found


def service_env(settings: dict[str, list[str]], read) -> dict[str, str]:
    """The unit's environment as systemd gives it: its EnvironmentFiles, read as root before the service drops to
    its account (`read(path)`: the file's text in the root; a leading - makes a missing file no error), then its
    Environment= lines; nothing of the caller's."""
    env = {"PATH": PATH, "LANG": "C.UTF-8"}
    for path in settings.get("EnvironmentFile", []):
        try:
            env.update(environment_file(read(path.lstrip("-"))))
        except FileNotFoundError:
            if not path.startswith("-"):
                raise
    for assignment in settings.get("Environment", []):
        for word in shlex.split(assignment):
            key, value = word.split("=", 1)
            env[key] = value
    return env


@dataclass
class HeadNode:
    """The fresh head node: its root, its bound folders, the services the guide started."""

    root: Path = WORK / "root"
    logs: Path = WORK / "logs"
    binds: list[Path] = field(default_factory=list)
    services: dict[str, subprocess.Popen] = field(default_factory=dict)
    lock: int | None = None

    def sh(self, script: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
        """A script as root in the root, in the release's folder, with the site's network settings."""
        env = {
            "PATH": PATH,
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "DEBIAN_FRONTEND": "noninteractive",
            "PIP_CERT": CA_IN_ROOT,
            "NODE_EXTRA_CA_CERTS": CA_IN_ROOT,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_DEFAULT_TIMEOUT": "180",
        }
        # chroot starts in the root's /: the guide's commands run in the release's folder
        standin = f'systemctl() {{ echo "$*" >> {SYSTEMCTL_LOG}; }}\ncd {RELEASE_IN_ROOT}\n'
        argv = ["chroot", str(self.root), "bash", "-euo", "pipefail", "-c", standin + script]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(
                f"the guide's block failed ({done.returncode}):\n{script}\n{done.stdout}\n{done.stderr}"
            )
        return done

    def bind(self, source: Path, target: str, read_only: bool = False) -> None:
        point = self.root / target.lstrip("/")
        if source.is_dir():
            point.mkdir(parents=True, exist_ok=True)
        else:
            point.parent.mkdir(parents=True, exist_ok=True)
            point.touch()
        subprocess.run(["mount", "--bind", str(source), str(point)], check=True, timeout=30)
        if read_only:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(point)], check=True, timeout=30)
        self.binds.append(point)

    def make(self, release: Path) -> None:
        """debootstrap's Debian 12, then what a site's head node has before the guide (the module's list)."""
        WORK.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.lock = os.open(WORK / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AssertionError(f"another test's head node holds {WORK}: one at a time") from None
        self.close(keep_lock=True)  # of a run that stopped half-way
        self.logs.mkdir(mode=0o700, exist_ok=True)
        platform.debootstrap(SUITE, self.root)
        self.root.chmod(0o755)
        policy = self.root / "usr/sbin/policy-rc.d"  # no daemon of the root starts (munge's would)
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        shutil.copy2("/etc/resolv.conf", self.root / "etc/resolv.conf")
        shutil.copy2("/etc/hosts", self.root / "etc/hosts")
        shutil.copy2("/etc/ssl/certs/ca-certificates.crt", self.root / CA_IN_ROOT.lstrip("/"))
        self._accounts()
        shutil.copytree(release, self.root / RELEASE_IN_ROOT.relative_to("/"))
        subprocess.run(["mount", "-t", "proc", "proc", str(self.root / "proc")], check=True, timeout=30)
        archives = CACHE / "guide-debs"  # the root's apt downloads, kept by `reset`
        archives.mkdir(parents=True, exist_ok=True)
        self.bind(archives, "/var/cache/apt/archives")
        self.sh("apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-client munge", timeout=900)
        self.bind(Path("/etc/slurm"), "/etc/slurm", read_only=True)
        self.bind(Path("/run/munge"), "/run/munge", read_only=True)  # its socket connects all the same
        self.bind(Path("/home"), "/home", read_only=True)
        self.bind(Path("/mnt/isilon"), "/mnt/isilon", read_only=True)

    def _accounts(self) -> None:
        """The demo people's passwd and group lines: the site's accounts, as nss gives them to the head node."""
        for table, names in (("passwd", USERS), ("group", GROUPS)):
            lines = Path(f"/etc/{table}").read_text().splitlines()
            wanted = [line for line in lines if line.split(":", 1)[0] in names]
            with (self.root / "etc" / table).open("a") as f:
                f.write("".join(line + "\n" for line in wanted))

    def systemctl_calls(self) -> list[list[str]]:
        path = self.root / SYSTEMCTL_LOG.lstrip("/")
        calls = [shlex.split(line) for line in path.read_text().splitlines()] if path.exists() else []
        path.unlink(missing_ok=True)
        return calls

    def unit(self, name: str) -> dict[str, list[str]]:
        folder = self.root / "etc/systemd/system"
        dropins = sorted((folder / f"{name}.service.d").glob("*.conf"))
        return merged((folder / f"{name}.service").read_text(), [p.read_text() for p in dropins])

    def service_env(self, settings: dict[str, list[str]]) -> dict[str, str]:
        return service_env(settings, lambda path: (self.root / path.lstrip("/")).read_text())

    def start(self, name: str) -> None:
        """The unit's ExecStartPre commands, each to its end, then its ExecStart in the background."""
        settings = self.unit(name)
        for command in settings.get("ExecStartPre", []):
            done = subprocess.run(
                ["chroot", str(self.root), *service_argv(settings, command)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, f"{name}'s ExecStartPre {command} failed:\n{done.stdout}\n{done.stderr}"
        log = (self.logs / f"{name}.log").open("ab")
        self.services[name] = subprocess.Popen(
            ["chroot", str(self.root), *service_argv(settings, settings["ExecStart"][-1])],
            env=self.service_env(settings), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def stop(self, name: str) -> None:
        process = self.services.pop(name, None)
        if process and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def act(self, calls: list[list[str]]) -> None:
        """What the guide asked of systemctl: enable --now, start, restart, stop; daemon-reload reads nothing here
        (every start reads the unit anew)."""
        for call in calls:
            verb, names = call[0], [n.removesuffix(".service") for n in call[1:] if not n.startswith("--")]
            if verb in ("start", "restart") or (verb == "enable" and "--now" in call):
                for name in names:
                    self.stop(name)
                    self.start(name)
                    time.sleep(1)  # the proxy before the hub, as After= orders them
            elif verb == "stop":
                for name in names:
                    self.stop(name)
            elif verb not in ("daemon-reload", "enable"):
                raise AssertionError(f"the guide asks systemctl {' '.join(call)}, which the test cannot stand in for")

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self, keep_lock: bool = False) -> None:
        for name in list(self.services):
            self.stop(name)
        platform.remove_tree(self.root)  # unbound first; the root stays if anything is still mounted in it
        self.binds.clear()
        if self.lock is not None and not keep_lock:
            os.close(self.lock)
            self.lock = None

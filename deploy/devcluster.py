"""The dev cluster's services: configure, start, stop and report them.

Run by deploy/devcluster (after it installed the Debian packages and the
portal's Python environment) with Debian's python3; standard library only.

    python3 deploy/devcluster.py up | down | status | token | restart-hub
"""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import devdirectory  # noqa: E402

PREFIX = Path(os.environ.get("DSPORTAL_PREFIX", "/opt/dsportal"))
VENV = PREFIX / "venv"
STATE = Path("/var/lib/dsportal-dev")
LOGS = Path("/var/log/dsportal-dev")
ETC = Path("/etc/dsportal")
HUB_STATE = Path("/var/lib/dsportal")
ADMIN_TOKEN = ETC / "admin.token"
CRYPT_KEY = ETC / "crypt.key"
STORAGE = Path("/mnt/isilon")
NODES = {"node001": 6821, "node002": 6822}
SLURMCTLD_PORT = 6817
LDAP_URI = "ldap://127.0.0.1:389/"
HUB_URL = "http://127.0.0.1:8000"
GROUPS = {"datasci": 5000, "hpcadmin": 5100}
USERS = {"alice": (5001, ["datasci"]), "bob": (5002, ["datasci"]), "carol": (5003, ["datasci", "hpcadmin"])}


class ClusterError(RuntimeError):
    """A step failed; the message says what to do."""


def say(message: str) -> None:
    print(f"devcluster: {message}", flush=True)


def run(argv: list[str], timeout: float = 60, check: bool = True, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and result.returncode != 0:
        raise ClusterError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")
    return result


def write_if_changed(path: Path, text: str, mode: int = 0o644) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    path.chmod(mode)
    return True


# --- processes ---------------------------------------------------------------
def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def read_pid(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid_alive(pid) else None


def listener_of(port: int) -> str:
    """Who listens on TCP `port` ("" if nobody)."""
    out = run(["ss", "-H", "-ltnp", f"sport = :{port}"], check=False).stdout.strip()
    return out


def log_tail(name: str, lines: int = 8) -> str:
    try:
        return "\n".join((LOGS / name).read_text().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_for(check, timeout: float, what: str, log: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    detail = f"; the end of {LOGS / log}:\n{log_tail(log)}" if log else f"; see the logs in {LOGS}"
    raise ClusterError(f"{what} did not happen within {timeout:g} s{detail}")


def stop_pid(pidfile: Path, name: str, timeout: float = 20) -> None:
    pid = read_pid(pidfile)
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return
    say(f"stopping {name} (pid {pid})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    pidfile.unlink(missing_ok=True)


@dataclass
class Service:
    name: str
    pidfile: Path
    port: int | str


def services() -> list[Service]:
    return [
        Service("munged", Path("/run/munge/munged.pid"), "socket /run/munge/munge.socket.2"),
        Service("slapd", STATE / "slapd" / "slapd.pid", 389),
        Service("slurmctld", Path("/run/slurmctld.pid"), SLURMCTLD_PORT),
        *[Service(f"slurmd {n}", Path(f"/run/slurmd-{n}.pid"), p) for n, p in NODES.items()],
        Service("jupyterhub", STATE / "jupyterhub.pid", "8000 (proxy), 8081 (hub API)"),
    ]


# --- machine setup -------------------------------------------------------------
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


MODULEFILES = Path("/opt/modulefiles")


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


# --- munge and slurm -------------------------------------------------------------
def ensure_munge() -> None:
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        run(["mungekey", "--create", "--keyfile", str(key)])
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    Path("/run/munge").mkdir(exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    if read_pid(Path("/run/munge/munged.pid")):
        return
    say("starting munged")
    run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"])
    wait_for(lambda: run(["munge", "-n"], check=False).returncode == 0, 15, "munged answering")


def slurm_conf() -> str:
    nodes = "\n".join(
        f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={n} Port={p} CPUs=40 Boards=1 SocketsPerBoard=2 "
        f"CoresPerSocket=20 ThreadsPerCore=1 RealMemory=393216 Gres=gpu:4 State=UNKNOWN"
        for n, p in NODES.items()
    )
    return f"""\
# Slurm for the DS Portal dev cluster: two virtual C4140-like GPU nodes on this machine.
ClusterName=dsportal
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={SLURMCTLD_PORT}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={STATE}/slurmctld
SlurmdSpoolDir={STATE}/slurmd/%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile={LOGS}/slurmctld.log
SlurmdLogFile={LOGS}/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
MinJobAge=60
KillWait=5
SchedulerParameters=sched_interval=2
MessageTimeout=10
{nodes}
PartitionName=sxm2 Nodes={",".join(NODES)} Default=YES MaxTime=12:00:00 State=UP
"""


def gres_conf() -> str:
    gpus = STATE / "gpus"
    return "AutoDetect=off\n" + "".join(
        f"NodeName={n} Name=gpu File={gpus}/{n}-nvidia[0-3]\n" for n in NODES
    )


def ensure_slurm() -> None:
    (STATE / "slurmctld").mkdir(parents=True, exist_ok=True)
    gpus = STATE / "gpus"
    gpus.mkdir(parents=True, exist_ok=True)
    devices_new = not all((gpus / f"{n}-nvidia{i}").is_char_device() for n in NODES for i in range(4))
    for n in NODES:
        (STATE / "slurmd" / n).mkdir(parents=True, exist_ok=True)
        for i in range(4):
            # Stand-ins for /dev/nvidiaN: character devices (Slurm wants devices to set
            # CUDA_VISIBLE_DEVICES) with /dev/null's numbers, since the dev nodes have no GPUs.
            device = gpus / f"{n}-nvidia{i}"
            if not device.is_char_device():
                device.unlink(missing_ok=True)
                os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    changed = devices_new
    changed |= write_if_changed(Path("/etc/slurm/slurm.conf"), slurm_conf())
    changed |= write_if_changed(Path("/etc/slurm/gres.conf"), gres_conf())
    if changed:
        stop_slurm()
    if not read_pid(Path("/run/slurmctld.pid")):
        say("starting slurmctld")
        run(["slurmctld"])
    for n in NODES:
        if not read_pid(Path(f"/run/slurmd-{n}.pid")):
            say(f"starting slurmd {n}")
            run(["slurmd", "-N", n])
    wait_for(lambda: run(["scontrol", "ping"], check=False).returncode == 0, 30, "slurmctld answering",
             "slurmctld.log")

    def nodes_up() -> bool:
        out = run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout.split()
        states = dict(zip(out[::2], out[1::2]))
        for n, state in states.items():
            if state.rstrip("*~#") in ("down", "drain", "drng"):
                run(["scontrol", "update", f"nodename={n}", "state=resume"], check=False)
        return len(states) == len(NODES) and all(s.rstrip("*") in ("idle", "mix", "alloc") for s in states.values())

    wait_for(nodes_up, 60, "both Slurm nodes idle", "slurmd-node001.log")


def stop_slurm() -> None:
    for n in NODES:
        stop_pid(Path(f"/run/slurmd-{n}.pid"), f"slurmd {n}")
    stop_pid(Path("/run/slurmctld.pid"), "slurmctld")


# --- ldap ------------------------------------------------------------------------------
def ensure_slapd() -> None:
    folder = STATE / "slapd"
    if read_pid(folder / "slapd.pid"):
        return
    who = listener_of(389)
    if who:
        raise ClusterError(f"port 389 is taken by another LDAP server:\n{who}\n"
                           "stop it (e.g. Debian's own slapd) and run `deploy/devcluster up` again.")
    if not (folder / "data" / "data.mdb").exists():
        say("building the demo directory (alice, bob, carol; groups datasci, hpcadmin)")
        devdirectory.build(folder)
    say("starting slapd on 127.0.0.1:389")
    devdirectory.start(folder, LDAP_URI)


# --- the portal ------------------------------------------------------------------------
HUB_DEV_SETTINGS = f"""
# --- dev cluster additions (deploy/devcluster) ---
c.JupyterHub.services = [{{"name": "devcluster-admin", "api_token": open("{ADMIN_TOKEN}").read().strip()}}]
c.JupyterHub.load_roles = [{{"name": "admin", "services": ["devcluster-admin"]}}]
c.JupyterHub.pid_file = "{STATE}/jupyterhub.pid"
c.ConfigurableHTTPProxy.pid_file = "{STATE}/jupyterhub-proxy.pid"
c.Spawner.poll_interval = 10
"""


def ensure_portal_config() -> bool:
    """Write /etc/dsportal; True if anything the hub reads changed."""
    ETC.mkdir(mode=0o755, exist_ok=True)
    text = (HERE / "portal.dev.yaml").read_text()
    changed = write_if_changed(ETC / "portal.yaml", text)
    if changed:
        say(f"wrote {ETC / 'portal.yaml'} from deploy/portal.dev.yaml")
    check = run([str(VENV / "bin" / "dsportal"), "check-config", str(ETC / "portal.yaml")], check=False)
    if check.returncode != 0:
        raise ClusterError(f"{ETC / 'portal.yaml'} is invalid:\n{check.stdout}")
    for secret, size in ((ADMIN_TOKEN, 32), (CRYPT_KEY, 32)):
        if not secret.exists():
            secret.write_text(secrets.token_hex(size))
        secret.chmod(0o600)
    config = (HERE / "jupyterhub_config.py").read_text() + HUB_DEV_SETTINGS
    return write_if_changed(ETC / "jupyterhub_config.py", config) or changed


def hub_answers() -> bool:
    try:
        with urllib.request.urlopen(f"{HUB_URL}/hub/api/", timeout=5) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False


def start_hub() -> None:
    pidfile = STATE / "jupyterhub.pid"
    if read_pid(pidfile):
        return
    for port in (8000, 8081, 8001):
        who = listener_of(port)
        if who:
            raise ClusterError(f"port {port} is already taken:\n{who}\nstop that process and run `deploy/devcluster up` again.")
    say("starting JupyterHub with configurable-http-proxy on 127.0.0.1:8000")
    env = {**os.environ, "DSPORTAL_CONFIG": str(ETC / "portal.yaml"),
           "JUPYTERHUB_CRYPT_KEY": CRYPT_KEY.read_text().strip(),
           "PATH": f"{VENV / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    HUB_STATE.mkdir(mode=0o700, exist_ok=True)
    log = open(LOGS / "jupyterhub.log", "ab")
    proc = subprocess.Popen([str(VENV / "bin" / "jupyterhub"), "-f", str(ETC / "jupyterhub_config.py")],
                            cwd=HUB_STATE, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    pidfile.write_text(str(proc.pid))

    def up() -> bool:
        if proc.poll() is not None:
            tail = (LOGS / "jupyterhub.log").read_text()[-2000:]
            raise ClusterError(f"JupyterHub exited ({proc.returncode}); the end of {LOGS / 'jupyterhub.log'}:\n{tail}")
        return hub_answers()

    wait_for(up, 90, "JupyterHub answering on port 8000")


def stop_hub() -> None:
    stop_pid(STATE / "jupyterhub.pid", "jupyterhub")
    stop_pid(STATE / "jupyterhub-proxy.pid", "configurable-http-proxy")


# --- commands --------------------------------------------------------------------------
def up() -> None:
    for folder in (STATE, LOGS):
        folder.mkdir(parents=True, exist_ok=True)
    ensure_hosts()
    ensure_accounts()
    ensure_storage()
    ensure_demo_module()
    ensure_munge()
    ensure_slurm()
    ensure_slapd()
    config_changed = ensure_portal_config()
    if (config_changed or os.environ.get("DSPORTAL_RESTART_HUB")) and read_pid(STATE / "jupyterhub.pid"):
        say("the portal was updated: restarting JupyterHub (sessions keep running)")
        stop_hub()
    start_hub()
    print(f"""
DS Portal is up: {HUB_URL}
  logins: alice / alice-pw, bob / bob-pw, carol / carol-pw (carol is an admin)
  logs:   {LOGS}
  admin API token: deploy/devcluster token
""")


def down() -> None:
    stop_hub()
    run(["scancel", "--quiet", "--name", ",".join(f"dsportal-{u}" for u in USERS)], check=False, timeout=20)
    stop_slurm()
    devdirectory.stop(STATE / "slapd")
    stop_pid(Path("/run/munge/munged.pid"), "munged")
    say("everything is stopped")


def status() -> int:
    down_count = 0
    for s in services():
        pid = read_pid(s.pidfile)
        state = f"up    pid {pid:<7}" if pid else "down  " + " " * 11
        down_count += pid is None
        print(f"{s.name:<16} {state} port {s.port}")
    print(f"logs: {LOGS}")
    return 1 if down_count else 0


def restart_hub() -> None:
    stop_hub()
    start_hub()


def token() -> None:
    if not ADMIN_TOKEN.exists():
        raise ClusterError("no admin token yet; run `deploy/devcluster up` first.")
    print(ADMIN_TOKEN.read_text().strip())


def main(argv: list[str]) -> int:
    if os.geteuid() != 0:
        print("devcluster: run me as root: I start system services.", file=sys.stderr)
        return 2
    commands = {"up": up, "down": down, "status": status, "token": token, "restart-hub": restart_hub}
    if len(argv) != 1 or argv[0] not in commands:
        print(f"usage: devcluster.py {' | '.join(commands)}", file=sys.stderr)
        return 2
    try:
        return commands[argv[0]]() or 0
    except ClusterError as e:
        print(f"devcluster: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

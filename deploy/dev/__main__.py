"""python3 -m deploy.dev up | down | reset | status | token | restart-hub | prune-venv | restore-builds   (run by deploy/devcluster, as root)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import (
    accounting,
    associations,
    builds,
    demo,
    directory,
    hosts,
    images,
    locks,
    machine,
    mail,
    nvml,
    platform,
    prometheus,
    registry,
    release,
    reset,
    slurmconf,
    supervisor,
    tls,
)
from .common import (
    ETC,
    HUB_STATE,
    LDAP_URI,
    LOGS,
    NODES,
    SERVICE_USER,
    SLURMCTLD_PORT,
    SLURMDBD_PORT,
    STATE,
    VENV,
    ClusterError,
    listener_of,
    run,
    say,
    step,
    wait_for,
)
from .portal import (
    ADMIN_TOKEN,
    HUB_URL,
    PROXY_COMMAND,
    ensure_portal_config,
    hub_answers,
    hub_environment,
    proxy_argv,
    proxy_environment,
)
from .supervisor import Program

HERE = Path(__file__).resolve().parent.parent  # deploy/

SLAPD_DIR = STATE / "slapd"
HUB_PORTS = {"proxy": (8000, 8001), "jupyterhub": (8081,)}


def node_program(node: str, port: int) -> Program:
    """The node's slurmd, on its own host (deploy/dev/hosts.py): every job step of the node is its child."""
    slurmd = ["/usr/sbin/slurmd", "-D", "-N", node]
    return Program(f"slurmd-{node}", hosts.onhost_argv(node, slurmd), f"{hosts.ADDRESSES[node]}:{port}", shows=slurmd)


def programs() -> list[Program]:
    """The daemons; the hub and its proxy as the unprivileged service account, umask 077."""
    ready = (ETC / "crypt.key").exists()
    return [
        Program("munged", ["/usr/sbin/munged", "-F"], "socket /run/munge/munge.socket.2", user="munge"),
        *accounting.programs(),
        Program("slurmctld", ["/usr/sbin/slurmctld", "-D"], str(SLURMCTLD_PORT)),
        *[node_program(n, p) for n, p in NODES.items()],
        Program("slapd", directory.slapd_argv(SLAPD_DIR, LDAP_URI), "389"),
        mail.program(),
        registry.program(),
        prometheus.program(),
        Program(
            "proxy",
            PROXY_COMMAND,
            "8000, API 8001",
            user=SERVICE_USER,
            directory=str(HUB_STATE),
            environment=proxy_environment() if ready else {},
            shows=proxy_argv() if ready else None,
            umask="077",
        ),
        Program(
            "jupyterhub",
            [str(VENV / "bin" / "jupyterhub"), "-f", str(ETC / "jupyterhub_config.py")],
            "8081 (hub API)",
            user=SERVICE_USER,
            directory=str(HUB_STATE),
            environment=hub_environment() if ready else {},
            stopwait=30,
            umask="077",
        ),
    ]


def free_or_ours(program: str, port: int) -> None:
    who = listener_of(port)
    if who and supervisor.states().get(program, ("",))[0] != "RUNNING":
        raise ClusterError(
            f"port {port} is already taken:\n{who}\nstop that process (e.g. a system {program}) "
            "and run `deploy/devcluster up` again."
        )


def start_accounting(restart: bool, chosen: platform.Platform) -> None:
    """MariaDB, then slurmdbd: slurmctld, started next, registers its cluster with it."""
    free_or_ours("mariadb", accounting.DB_PORT)
    supervisor.start("mariadb")
    wait_for(accounting.database_answers, 60, "MariaDB answering", "mariadb.out")
    accounting.ensure_database_user(chosen)
    if restart:
        supervisor.stop("slurmdbd")
    free_or_ours("slurmdbd", SLURMDBD_PORT)
    supervisor.start("slurmdbd")
    wait_for(accounting.slurmdbd_answers, 30, "slurmdbd answering", "slurmdbd.log")


def start_slurm(restart: bool) -> None:
    if restart:
        supervisor.stop(*[f"slurmd-{n}" for n in NODES], "slurmctld")
    supervisor.start("slurmctld")
    for n in NODES:
        supervisor.start(f"slurmd-{n}")
    wait_for(slurmconf.controller_answers, 30, "slurmctld answering", "slurmctld.log")
    # a job that ends before slurmctld registered would still be sent later; waiting makes `up` mean "accounted"
    wait_for(accounting.cluster_registered, 30, "slurmctld registered with slurmdbd", "slurmctld.log")
    associations.ensure_associations()  # before any job: Slurm refuses a user's job without one
    wait_for(slurmconf.nodes_idle, 60, "every Slurm node idle", "slurmd-node001.log")


def ensure_directory() -> None:
    """The demo directory's data and service password (slapadd, offline): the portal's config reads the password."""
    people = SLAPD_DIR / "demo.txt"  # who the directory was built with: a changed demo.py rebuilds it
    wanted = f"{demo.logins()}\n{demo.summary()}\n"
    built = people.read_text() if people.exists() else ""
    if not (SLAPD_DIR / "data" / "data.mdb").exists() or built != wanted:
        say(f"building the demo directory ({demo.summary()})")
        if supervisor.states().get("slapd", ("",))[0] == "RUNNING":
            supervisor.stop("slapd")  # slapadd works offline
        directory.build(SLAPD_DIR)
        people.write_text(wanted)
    SLAPD_DIR.chmod(0o700)  # one an older `up` made: its files hold passwords and hashes
    for name in ("slapd.conf", "entries.ldif", "service.pw", "root.pw"):
        (SLAPD_DIR / name).chmod(0o600)


def start_directory() -> None:
    free_or_ours("slapd", 389)
    supervisor.start("slapd")
    wait_for(lambda: directory.answers(SLAPD_DIR, LDAP_URI), 20, "slapd answering", "slapd.out")


def ensure_directory_mail() -> None:
    """The demo people's mail addresses, also in a directory built before they were declared."""
    lacking = directory.people_without_mail(SLAPD_DIR, LDAP_URI)
    for user in demo.USERS:
        if user.name in lacking:
            say(f"adding {user.mail} to the demo directory")
            directory.modify(SLAPD_DIR, LDAP_URI, directory.add_mail_ldif(user.name, user.mail))


def start_mail(restart: bool) -> None:
    if restart:
        supervisor.stop("exim4")
    free_or_ours("exim4", mail.PORT)
    supervisor.start("exim4")
    wait_for(mail.answers, 20, "exim answering on 127.0.0.1:25", "exim4.out")


def start_registry(restart: bool) -> None:
    if restart:
        supervisor.stop("registry")
    free_or_ours("registry", registry.PORT)
    supervisor.start("registry")
    wait_for(registry.answers, 30, "the image registry answering", "registry.out")
    registry.ensure_pushed()
    registry.ensure_pulled()


def start_prometheus(restart: bool) -> None:
    """After the hub: it scrapes the hub's metrics (a scrape that fails meanwhile is only a gap)."""
    if restart:
        supervisor.stop("prometheus")
    free_or_ours("prometheus", prometheus.PORT)
    supervisor.start("prometheus")
    wait_for(prometheus.answers, 60, "Prometheus answering on 127.0.0.1:9090", "prometheus.out")


def start_hub(restart: bool) -> None:
    if restart and supervisor.states().get("jupyterhub", ("",))[0] == "RUNNING":
        say("the portal was updated: restarting JupyterHub (sessions keep running)")
        supervisor.stop("jupyterhub")
    for program, ports in HUB_PORTS.items():
        for port in ports:
            free_or_ours(program, port)
    supervisor.start("proxy")
    supervisor.start("jupyterhub")
    wait_for(hub_answers, 90, "JupyterHub answering on port 8000", "jupyterhub.out")


def prepare_machine() -> tuple[bool, bool]:
    """The hosts and their names, accounts, sudoers, TLS, storage, the demo module: whether the certificate is new,
    and whether a node's host is."""
    hosts_new = hosts.ensure_network()
    machine.ensure_hosts()
    machine.ensure_accounts()
    machine.ensure_service_account()
    machine.ensure_sudoers(HERE / "sudoers.d" / "dsportal")
    tls_new = tls.ensure_certificates()
    tls.ensure_host_names()
    machine.ensure_storage()
    machine.ensure_demo_module()
    machine.ensure_private_processes()
    return tls_new, hosts_new


def stop_slurm() -> None:
    """The hub stopped (no new job meanwhile; it restarts after), every job cancelled and Slurm's daemons stopped,
    before the machine's Slurm programs change under them: a job's processes outliving its slurmd would hold its
    GPUs unknown to the other platform's controller."""
    supervisor.stop("jupyterhub")
    if supervisor.states().get("slurmctld", ("",))[0] == "RUNNING":
        listed = run(["squeue", "--noheader", "--format=%A"], check=False, timeout=20)
        if listed.returncode != 0:
            say(f"slurmctld did not list its jobs ({listed.stderr.strip()}): any it holds wait in its state")
        elif listed.stdout.split():
            say(f"cancelling the cluster's {len(listed.stdout.split())} jobs before its Slurm changes")
            run(["scancel", *listed.stdout.split()], check=False, timeout=30)

            def none_left() -> bool:
                again = run(["squeue", "--noheader"], check=False, timeout=20)
                return again.returncode == 0 and not again.stdout.strip()

            wait_for(none_left, 60, "every job ended", "slurmctld.log")
    supervisor.stop(*[f"slurmd-{n}" for n in NODES], "slurmctld", "slurmdbd")


def ensure_platform(chosen: platform.Platform) -> bool:
    """The machine runs the chosen platform's Slurm, and the choice is kept; True if it switched (every Slurm
    daemon and the hub start anew).  The root is made first, while the cluster still runs."""
    stage = platform.prepare(chosen)
    switching = platform.switching(chosen, stage)
    if switching:
        say(f"switching the cluster to {chosen.name}'s Slurm {chosen.slurm}")
        if supervisor.running():
            stop_slurm()
        platform.ensure(chosen, stage)
    platform.choose(chosen.name)
    return switching


def timed(name: str, function, *args) -> None:
    with step(name):
        function(*args)


def up(platform_name: str | None = None) -> None:
    chosen = platform.named(platform_name) if platform_name else platform.chosen()
    for folder in (STATE, LOGS):
        folder.mkdir(mode=0o750, parents=True, exist_ok=True)
        folder.chmod(0o750)  # root's: logs hold user names and paths, STATE the directory's passwords
    with step("the machine (hosts, their network, accounts, sudoers, TLS, storage, modules)"):
        tls_new, hosts_new = prepare_machine()
    with step(f"Slurm's platform ({chosen.name}, Slurm {chosen.slurm})"):
        switched = ensure_platform(chosen)
    with step("configuration files"):
        slurmconf.ensure_munge_key()
        slurm_changed = slurmconf.ensure_slurm_files(chosen) | switched
        slurm_changed |= hosts.ensure_disks() | hosts_new  # a node's wrapper or host is new: its slurmd starts anew
        slurmdbd_changed = accounting.ensure_files(chosen) | switched
        mail_changed = mail.ensure_config()
        nvml.ensure_fake_nvml()
        registry_changed = registry.ensure_registry_files()
        prometheus_changed = prometheus.ensure_files()  # before the hub's config: it names the scraper's token
    with step("the container image"):
        images.ensure_dev_image()
    with step("the demo directory"):
        ensure_directory()
    with step("the portal's configuration"):
        hub_changed = ensure_portal_config()
    with step("munge"):
        supervisor.ensure(programs())
        supervisor.start("munged")
        wait_for(lambda: run(["munge", "-n"], check=False).returncode == 0, 15, "munged answering", "munged.out")
    # the registry's push and pull (half a minute, mostly CPU) beside Slurm's, the directory's and the hub's starts
    # (mostly waiting; the hub reads no image at its start: a session's kernels do); its errors are raised here all
    # the same, before `up` says the cluster is up
    with ThreadPoolExecutor(max_workers=1) as beside:
        registry_ready = beside.submit(
            timed, "the image registry (push, pull; beside Slurm and the hub)", start_registry, registry_changed
        )
        with step("MariaDB, slurmdbd"):
            start_accounting(restart=slurmdbd_changed, chosen=chosen)
        with step("Slurm"):
            start_slurm(restart=slurm_changed)
        with step("slapd, exim"):
            start_directory()
            ensure_directory_mail()
            start_mail(restart=mail_changed)
        with step("JupyterHub and the proxy"):
            if tls_new:
                supervisor.stop("proxy")  # serve the new certificate
            restart_hub_now = hub_changed or prometheus_changed or switched  # a hub that knew the other Slurm's jobs
            start_hub(restart=restart_hub_now or bool(os.environ.get("DSPORTAL_RESTART_HUB")))
        with step("Prometheus"):
            start_prometheus(restart=prometheus_changed)
        registry_ready.result()
    print(f"""
DS Portal is up: {HUB_URL}  ({chosen.name}, Slurm {chosen.slurm})
  trust:  the dev CA /etc/dsportal/dev-ca/ca.crt (already trusted by this machine's command-line clients)
  logins: {demo.logins()}
  logs:   {LOGS}
  admin API token: deploy/devcluster token
""")


def down() -> None:
    if supervisor.running():
        supervisor.stop("jupyterhub", "proxy")
        run(["scancel", "--quiet", "--name=dsportal"], check=False, timeout=20)
        supervisor.shutdown()
    say("everything is stopped")


def status() -> int:
    states = supervisor.states()
    down_count = 0
    for p in programs():
        state, pid = states.get(p.name, ("STOPPED", None))
        up_now = state == "RUNNING"
        down_count += not up_now
        shown = f"up    pid {pid:<7}" if up_now else f"down  ({state.lower()})".ljust(17)
        print(f"{p.name:<16} {shown} port {p.port}")
    print(f"logs: {LOGS}")
    return 1 if down_count else 0


def restart_hub() -> None:
    supervisor.stop("jupyterhub")
    start_hub(restart=False)


def token() -> None:
    if not ADMIN_TOKEN.exists():
        raise ClusterError("no admin token yet; run `deploy/devcluster up` first.")
    print(ADMIN_TOKEN.read_text().strip())


def main(argv: list[str]) -> int:
    if os.geteuid() != 0:
        print("devcluster: run me as root: I start system services.", file=sys.stderr)
        return 2
    commands = {
        "up": up,
        "down": down,
        "reset": reset.reset,
        "status": status,
        "token": token,
        "restart-hub": restart_hub,
        "restore-builds": builds.restore_prefix_builds,  # before the bash side checks them against their locks
        "prune-venv": locks.prune,  # after the lock's install: what an earlier lock had goes
    }
    if argv[:1] == ["release"]:
        return release.main(argv[1:])
    platform_name = None
    if argv[:1] == ["up"] and len(argv) == 3 and argv[1] == "--platform":
        platform_name, argv = argv[2], argv[:1]
    if len(argv) != 1 or argv[0] not in commands:
        print(f"usage: python3 -m deploy.dev {' | '.join(commands)}   (up [--platform NAME])", file=sys.stderr)
        return 2
    try:
        if platform_name:
            return up(platform.named(platform_name).name) or 0
        return commands[argv[0]]() or 0
    except ClusterError as e:
        print(f"devcluster: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

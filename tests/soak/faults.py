"""Faults the soak injects into the dev cluster, and putting it back whole (as root).

The daemons are supervisord's programs (deploy/dev/supervisor.py, its private
socket); each fault stops one, or kills it as a crash would, waits a moment
and starts it again with the dev cluster's own start step (what `up` runs:
deploy/dev/__main__.py), which waits until the daemon answers.  One cuts a
node's network instead (deploy/dev/hosts.py), and puts it back.  A fault's
window runs from its start until that answer.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

from deploy.dev import __main__ as dev
from deploy.dev import hosts, supervisor
from deploy.dev.common import NODES, ClusterError, run

from .model import FaultWindow, Ledger

KINDS = ("hub restart", "proxy restart", "slurmctld stopped", "slapd stopped", "slurmd killed", "node cut off")
HOLD = {  # seconds a stopped daemon stays down
    "hub restart": (0.0, 0.0),  # stopped and started at once (`restart-hub`)
    "proxy restart": (1.0, 4.0),
    "slurmctld stopped": (10.0, 40.0),
    "slapd stopped": (10.0, 30.0),
    "slurmd killed": (5.0, 20.0),
    # a node's network cable out (deploy/dev/hosts.py): shorter than Slurm's SlurmdTimeout, as a switch's
    # restart or a flapping link is; the node's sessions stall meanwhile, and are neither ended nor lost
    "node cut off": (3.0, 15.0),
}
SLURM = ("slurmctld", *(f"slurmd-{n}" for n in NODES))
WATCHED = (*SLURM, "slapd", "proxy", "jupyterhub")  # what the faults touch: each restored by its start step
STUCK = ("down", "drain", "drng", "fail", "failg")  # node states (sinfo %t) a node does not leave by itself
LAST_START = 20.0  # no fault starts this close to the soak's end


def nodes_respond() -> bool:
    """Every node heard from by slurmctld and usable (busy or completing jobs is fine: `up`'s own wait for idle
    nodes is not, with the soak's jobs on them)."""
    listing = run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False, timeout=20).stdout
    states = {n: s for n, s in (line.split() for line in listing.splitlines() if len(line.split()) == 2)}
    return set(states) >= set(NODES) and not any(s.endswith("*") or s.rstrip("~#$@") in STUCK for s in states.values())


def _start_slurm() -> None:
    """slurmctld and the slurmds that are down started again, until the controller and every node answer."""
    for program in SLURM:
        supervisor.start(program)  # (one that runs is left alone)
    dev.wait_for(dev.slurmconf.controller_answers, 30, "slurmctld answering", "slurmctld.log")
    resume_nodes()  # a job launched on a node whose slurmd was away may have drained it: Slurm's doing, not the portal's
    dev.wait_for(nodes_respond, 60, "both Slurm nodes responding", "slurmctld.log")


def node_reached(node: str) -> bool:
    """The head reaches `node`'s slurmd at its address again."""
    try:
        with socket.create_connection((hosts.ADDRESSES[node], NODES[node]), timeout=1):
            return True
    except OSError:
        return False


def _mend_nodes() -> None:
    """Every node's cable in again (a soak stopped during a cut leaves none out)."""
    for node in NODES:
        hosts.mend(node)
    dev.wait_for(lambda: all(node_reached(n) for n in NODES), 30, "every node reached at its address")


def _start_hub() -> None:
    dev.start_hub(restart=False)


# each group of programs and the step of `up` that starts those of them that are down and waits until they answer
STEPS = ((SLURM, _start_slurm), (("slapd",), dev.start_directory), (("proxy", "jupyterhub"), _start_hub))


def down(programs=WATCHED) -> list[str]:
    states = supervisor.states()
    return [p for p in programs if states.get(p, ("",))[0] != "RUNNING"]


def pids(programs=WATCHED) -> dict[str, int | None]:
    """Each daemon's pid now (None while it is not running): a changed one was restarted."""
    states = supervisor.states()
    return {p: states[p][1] if states.get(p, ("",))[0] == "RUNNING" else None for p in programs}


def resume_nodes() -> list[str]:
    """Nodes Slurm set down or drained (a slurmd that vanished can leave its node so) made usable again."""
    listing = run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False, timeout=20).stdout
    pairs = (line.split() for line in listing.splitlines() if len(line.split()) == 2)
    stuck = sorted({n for n, s in pairs if s.rstrip("*~#$@") in STUCK})
    for node in stuck:
        run(["scontrol", "update", f"nodename={node}", "state=resume"], check=False, timeout=20)
    return stuck


def restore_all() -> list[str]:
    """Every daemon a fault touches running and answering again, its nodes usable; what could not be, in words."""
    problems = []
    try:
        _mend_nodes()
    except (ClusterError, subprocess.SubprocessError, OSError) as e:
        problems.append(f"mending the nodes' network: {e}")
    for programs, step in STEPS:
        try:
            if down(programs):
                step()
        except (ClusterError, subprocess.SubprocessError, OSError) as e:
            problems.append(f"restoring {', '.join(programs)}: {e}")
    resume_nodes()
    return problems


def gpus_kept(show_nodes: str) -> list[str]:
    """Nodes that Slurm counts GPUs in use on while no job runs there (pure: `scontrol -d -o show node`'s output).

    No job runs on a node whose CPUAlloc is 0 (every job holds a core at least)."""
    kept = []
    for line in show_nodes.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        used = re.findall(r"gpu(?::[^:(,]+)?:(\d+)", fields.get("GresUsed", ""))
        if fields.get("CPUAlloc") == "0" and any(int(n) for n in used):
            kept.append(fields.get("NodeName", "?"))
    return kept


def release_kept_gpus(wait: float = 60) -> list[str]:
    """Once the soak's jobs are gone: the nodes whose GPUs Slurm still counted in use, released.

    Slurm 22.05 can keep an ended job's GPUs allocated when the job ended across a controller restart (the
    soak's "slurmctld stopped"): the node then offers fewer GPUs to every later job ("Requested node
    configuration is not available" for more than are left), until slurmctld restarts and recounts them
    from its jobs.  That is Slurm's, not the portal's; the soak puts the cluster back whole, so it restarts
    the controller when it finds any."""
    deadline = time.monotonic() + wait
    while run(["squeue", "-h", "-o", "%i"], check=False, timeout=20).stdout.strip() and time.monotonic() < deadline:
        time.sleep(1)  # cancelled jobs complete (KillWait) before their GPUs are free
    kept = gpus_kept(run(["scontrol", "-d", "-o", "show", "node"], check=False, timeout=20).stdout)
    if kept:
        supervisor.stop("slurmctld")
        _start_slurm()
    return kept


def _kill(program: str) -> None:
    """SIGKILL, as a crash: supervisord then holds the program as exited (it never restarts one by itself)."""
    pid = supervisor.states().get(program, ("", None))[1]
    if pid:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while program not in down((program,)) and time.monotonic() < deadline:
        time.sleep(0.2)


def inject(kind: str, rng: random.Random) -> FaultWindow:
    """One fault, held for a random while, then the daemon started again; the window it made."""
    hold = rng.uniform(*HOLD[kind])
    started = time.time()
    target, problem = (
        {"hub restart": "jupyterhub", "proxy restart": "proxy", "slapd stopped": "slapd"}.get(kind, "slurmctld"),
        "",
    )
    try:
        if kind == "hub restart":
            dev.restart_hub()
        elif kind == "proxy restart":
            supervisor.stop("proxy")
            time.sleep(hold)
            _start_hub()
        elif kind == "slurmctld stopped":
            supervisor.stop("slurmctld")
            time.sleep(hold)
            _start_slurm()
        elif kind == "slapd stopped":
            supervisor.stop("slapd")
            time.sleep(hold)
            dev.start_directory()
        elif kind == "slurmd killed":
            target = f"slurmd-{rng.choice(sorted(NODES))}"
            _kill(target)
            time.sleep(hold)
            _start_slurm()
        elif kind == "node cut off":
            target = rng.choice(sorted(NODES))
            hosts.cut(target)
            try:
                time.sleep(hold)
            finally:
                hosts.mend(target)
            dev.wait_for(lambda: node_reached(target), 30, f"{target} reached again")
        else:
            raise ValueError(f"no fault called {kind!r}; the faults are {', '.join(KINDS)}")
    except (ClusterError, subprocess.SubprocessError, OSError) as e:
        problem = str(e)
        problem += "".join(f"; {p}" for p in restore_all())
    return FaultWindow(kind, target, started, time.time(), problem)


class Injector:
    """Faults of `kinds` in a shuffled round, one at a time, every `every` seconds on average, until `end_at`."""

    def __init__(self, kinds: tuple[str, ...], every: float, ledger: Ledger, seed: int, end_at: float):
        self.kinds, self.every, self.ledger, self.end_at = kinds, every, ledger, end_at
        self.rng = random.Random(seed)

    def run(self, stop: threading.Event) -> None:
        if not self.kinds:
            return
        turn: list[str] = []
        next_at = time.time() + self.every * self.rng.uniform(0.4, 0.8)
        while not stop.wait(max(0.0, next_at - time.time())):
            if time.time() > self.end_at - LAST_START:
                return
            turn = turn or self.rng.sample(self.kinds, len(self.kinds))
            self.ledger.add("faults", inject(turn.pop(), self.rng))
            next_at = time.time() + self.every * self.rng.uniform(0.6, 1.4)

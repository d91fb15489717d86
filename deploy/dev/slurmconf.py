"""Slurm's side of the dev cluster: the munge key, slurm.conf, gres.conf and GPU stand-ins.

Two virtual C4140-like GPU nodes on this machine, one slurmd each, with 4 GPUs of one type each (V100, A100), one
CPU-only node in a partition of its own (`cpu`), as real sites keep for preprocessing and CPU work, and one node
whose GPUs are MIG instances (`mig`: typed GRES named as Slurm's NVML autodetection names MIG profiles).  The daemons
themselves run under supervisord (deploy/dev/supervisor.py).

Slurm confines each job as a real site does (proctrack/cgroup, task/cgroup, cgroup.conf's Constrain*): the machine's
cgroup v1 controllers are shared by the two slurmd, each under its own slurm_NODE folder (Debian builds Slurm with
multiple-slurmd, whose cgroup prefix is /slurm_%n).  Measured here: ConstrainDevices gives a job its own GPUs' device
nodes and EPERM on the others; ConstrainRAMSpace kills a job above its --mem; ConstrainCores gives each job a cpuset,
but of this machine's CPUs: the 40 cores a node declares fold onto them, so two 1-core jobs get CPU 0 and CPU 1 and
every job of 2 or more cores gets both (cores are confined, not reserved: the dev nodes have fewer than they say).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
from pathlib import Path

from . import hosts
from .common import (
    CLUSTER_NAME,
    LOGS,
    NODES,
    PRIVATE_DATA,
    SLURMCTLD_PORT,
    SLURMDBD_PORT,
    SPOOL,
    STATE,
    run,
    write_if_changed,
)
from .platform import Platform

# Stand-ins for /dev/nvidiaN, one character device each, world-readable as the real ones are.  Numbers of their own
# (NVIDIA's major, 195, with no driver behind it: an open that the cgroup allows fails with ENXIO) so that the
# device cgroup can tell them apart: the cgroup allows or refuses a device by its major:minor.
GPUS = Path("/dev/dsportal-dev")
NVIDIA_MAJOR = 195
# Two GPU types, as a real cluster has (typed GRES: slurm.conf Gres=gpu:TYPE:4, gres.conf Type=): a session may ask
# for one by name (--gres=gpu:a100:2) or for any (--gres=gpu:2)
GPU_TYPES = {"node001": "v100", "node002": "a100"}
# node004's GPUs are MIG instances of two A100 80 GB, one cut in two 3g.40gb, the other with two of its 1g.10gb
# (slurm.conf Gres=gpu:a100_3g.40gb:2,gpu:a100_1g.10gb:2; Slurm's AutoDetect=nvml names them so): each a typed GPU
# of its own to Slurm and to the portal, in a partition of their own (`mig`)
MIG_NODE = "node004"
MIG_TYPES = {"a100_3g.40gb": 2, "a100_1g.10gb": 2}
GPUS_OF = {**{n: {t: 4} for n, t in GPU_TYPES.items()}, MIG_NODE: MIG_TYPES}  # each node's GPUs: type -> count
# node002's GPUs are each cut in SHARDED[node] shares (Slurm's gres/shard: gres.conf Name=shard Count=N File= for
# each GPU): a session may ask for a share of a GPU (--gres=shard:N); shards divide neither memory nor compute
SHARDED = {"node002": 4}
GPU_NODES = list(GPU_TYPES)  # the whole GPUs' nodes (sxm2, debug); node003 has no GPU
CPU_NODES = [n for n in NODES if n not in GPUS_OF]
CGROUP_CONF = Path("/etc/slurm/cgroup.conf")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def ensure_munge_key() -> None:
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        run(["mungekey", "--create", "--keyfile", str(key)])
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    Path("/run/munge").mkdir(exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")


def slurm_conf(platform: Platform) -> str:
    """slurm.conf for the platform's Slurm (pure but for the host's name): its own state and spool."""
    nodes = "\n".join(
        f"NodeName={n} NodeAddr={hosts.ADDRESSES[n]} NodeHostname={n} Port={p} CPUs=40 Boards=1 SocketsPerBoard=2 "
        f"CoresPerSocket=20 ThreadsPerCore=1 RealMemory=393216"
        + (" Gres=" + ",".join(f"gpu:{t}:{count}" for t, count in GPUS_OF[n].items()) if n in GPUS_OF else "")
        + (f",shard:{4 * SHARDED[n]}" if n in SHARDED else "")
        + " State=UNKNOWN"
        for n, p in NODES.items()
    )
    first_job = f"FirstJobId={platform.first_job_id}\n" if platform.first_job_id > 1 else ""
    return f"""\
# Slurm for the DS Portal dev cluster: two virtual C4140-like GPU nodes on this machine, 4 V100 and 4 A100, and a
# CPU-only node, each a host of its own on the cluster network {hosts.SUBNET} (deploy/dev/hosts.py); slurmctld and
# slurmdbd on the head node, this machine, reached at its address there.
ClusterName={CLUSTER_NAME}
SlurmctldHost={socket.gethostname().split(".")[0]}({hosts.HEAD_ADDRESS})
SlurmctldPort={SLURMCTLD_PORT}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={state_of(platform)}
{first_job}SlurmdSpoolDir={spool_of(platform)}/%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile={LOGS}/slurmctld.log
SlurmdLogFile={LOGS}/slurmd-%n.log
SlurmdParameters=config_overrides
# A job's processes are found by their cgroup (none escapes scancel by forking away), and each job is confined to
# its GPUs, cores and memory (cgroup.conf below)
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
# Every job goes to slurmdbd (deploy/dev/accounting.py), which keeps it in MariaDB: the
# portal's jobs panel reads finished jobs with sacct as the hub's unprivileged account.
# As many sites: squeue, sshare and scontrol show each user only their own jobs, usage and accounts.  The hub's
# account sees through it as a coordinator of the users' accounts (deploy/dev/associations.py).
PrivateData={PRIVATE_DATA}
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={hosts.HEAD_ADDRESS}
AccountingStoragePort={SLURMDBD_PORT}
# GPUs in the accounting too, in all and per type (sacct's AllocTRES shows gres/gpu=N,gres/gpu:a100=N): the usage
# and status pages' GPU-hours per type
AccountingStorageTRES=gres/gpu,{",".join(f"gres/gpu:{t}" for t in sorted({t for g in GPUS_OF.values() for t in g}))},gres/shard
# As a real site: Slurm refuses a job in an account its user is not in, above an association's limits, or with
# a QOS the association does not allow (the accounts: deploy/dev/associations.py)
AccountingStorageEnforce=associations,limits,qos
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
MpiDefault=none
MailProg=/bin/true
# No job ever runs as root: the portal submits as its users only, and this
# stops a mistake or a compromised hub from making a root job anyway.
DisableRootJobs=YES
# Usage is tracked as on a real site (sshare: each user's fairshare, each account's GPU-minutes used of its
# GrpTRESMins, decayed over a week); every priority weight is left 0, so jobs still start in submission order
PriorityType=priority/multifactor
PriorityCalcPeriod=1
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu,shard
ReturnToService=2
MinJobAge=60
KillWait=5
# A batch job waits for the scheduler's next pass (Slurm allocates none on
# submit).  batch_sched_delay=0 lets a submission start a pass at slurmctld's
# next tick; otherwise a pass within the last batch_sched_delay seconds (3 by
# default) holds it until the next full pass: a session waited 1.0-1.4 s here.
# sched_interval=2: a job that was pending starts within 2 s of room freeing.
SchedulerParameters=batch_sched_delay=0,sched_interval=2
MessageTimeout=10
{nodes}
PartitionName=sxm2 Nodes={",".join(GPU_NODES)} Default=YES MaxTime=12:00:00 State=UP
PartitionName=debug Nodes={",".join(GPU_NODES)} MaxTime=1:00:00 State=UP
PartitionName=cpu Nodes={",".join(CPU_NODES)} MaxTime=12:00:00 State=UP
PartitionName=mig Nodes={MIG_NODE} MaxTime=12:00:00 State=UP
"""


def cgroup_conf() -> str:
    return """\
# Each job sees its own GPUs (device nodes), cores (cpuset) and memory (its --mem), as on a real GPU cluster
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainDevices=yes
ConstrainCores=yes
ConstrainRAMSpace=yes
"""


def gres_conf() -> str:
    gpus = "".join(
        f"NodeName={n} Name=gpu Type={t} File={GPUS}/{n}-nvidia{i}\n"
        for n, types in GPUS_OF.items()
        for i, t in enumerate(t for t, count in types.items() for _ in range(count))
    )
    shards = "".join(
        f"NodeName={n} Name=shard Count={count} File={GPUS}/{n}-nvidia{i}\n"
        for n, count in SHARDED.items()
        for i in range(4)
    )
    return "AutoDetect=off\n" + gpus + shards


def state_of(platform: Platform) -> Path:
    """slurmctld's state: one per platform (24.11 converts 22.05's for good)."""
    return STATE / f"slurmctld{platform.suffix}"


def spool_of(platform: Platform) -> Path:
    return SPOOL / f"slurmd{platform.suffix}"


def ensure_slurm_files(platform: Platform) -> bool:
    """State folders, GPU stand-ins and the config files; True if the daemons must restart."""
    state_of(platform).mkdir(parents=True, exist_ok=True)
    SPOOL.mkdir(mode=0o755, exist_ok=True)
    SPOOL.chmod(0o755)  # a job's user runs its script from the spool (STATE is root's alone)
    changed = ensure_gpu_devices()
    for n in NODES:
        (spool_of(platform) / n).mkdir(mode=0o755, parents=True, exist_ok=True)
    changed |= write_if_changed(Path("/etc/slurm/slurm.conf"), slurm_conf(platform))
    changed |= write_if_changed(Path("/etc/slurm/gres.conf"), gres_conf())
    changed |= write_if_changed(CGROUP_CONF, cgroup_conf())
    return changed


def ensure_gpu_devices() -> bool:
    """Each node's four stand-in GPUs: character devices 195:0-3 (node001), 195:4-7 (node002), 195:8-11 (node004's
    MIG instances); True if made."""
    GPUS.mkdir(mode=0o755, exist_ok=True)
    GPUS.chmod(0o755)
    changed = False
    for number, (n, i) in enumerate((n, i) for n in GPUS_OF for i in range(4)):
        device, rdev = GPUS / f"{n}-nvidia{i}", os.makedev(NVIDIA_MAJOR, number)
        if not (device.is_char_device() and device.stat().st_rdev == rdev):
            device.unlink(missing_ok=True)
            os.mknod(device, stat.S_IFCHR, rdev)
            changed = True
        device.chmod(0o666)  # mknod's mode passes through the umask
    return changed


def remove_job_cgroups() -> None:
    """The slurm_NODE folders Slurm made in each cgroup controller (reset): deepest first, as rmdir wants."""
    for controller in CGROUP_ROOT.iterdir():
        for n in NODES:
            top = controller / f"slurm_{n}"
            if top.is_dir():
                folders = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
                for folder in [*folders, top]:
                    with contextlib.suppress(OSError):  # a job's process still in it: harmless to the next up
                        folder.rmdir()


def nodes_idle() -> bool:
    """True once every node is usable; resumes nodes Slurm left down after a restart."""
    out = run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout.split()
    states = dict(zip(out[::2], out[1::2], strict=False))  # an odd word out (a blank state) is dropped
    for n, state in states.items():
        if state.rstrip("*~#") in ("down", "drain", "drng"):
            run(["scontrol", "update", f"nodename={n}", "state=resume"], check=False)
    return len(states) == len(NODES) and all(s.rstrip("*") in ("idle", "mix", "alloc") for s in states.values())


def controller_answers() -> bool:
    return run(["scontrol", "ping"], check=False).returncode == 0

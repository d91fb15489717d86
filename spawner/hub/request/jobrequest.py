"""One Slurm job the portal submits as its user, and the one sbatch argument list built from it (pure).

A session (jobspec.py beside it), a run and a sweep's job array (spawner/hub/runs/jobscript.py) each
say what they want as a JobRequest; `sbatch_argv` alone turns one into a command line, as ood_core's adapters
each build theirs from one neutral Job::Script.  sbatch runs as the user through sudo, every value is checked
before it reaches the command line, and nothing passes through a shell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from portal.settings import SLURM_NAME, SlurmSettings

from ...slurmgres import GPU_TYPE

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Account:
    """The unix account a job runs as."""

    name: str
    home: str


@dataclass(frozen=True)
class JobRequest:
    """What one job asks Slurm for: its shape per node (one task per node), type, account, QOS and time, where its
    output goes, and which of the caller's variables it takes along."""

    user: Account
    name: str
    partition: str
    time: str  # Slurm's spelling: '08:00:00'
    cpus: int  # per node
    memory: str  # per node, Slurm's spelling: '48G'
    output: str
    chdir: str
    gpus: int = 0  # per node
    gpu_type: str = ""  # "" = any type
    shards: int = 0  # shares of one GPU (Slurm's gres/shard) instead of whole GPUs: one node's
    nodes: int = 1
    account: str = ""  # the user's choice; "" = the admin's (slurm.account), else Slurm's default
    qos: str = ""  # likewise
    env_names: tuple[str, ...] = ()  # the variables sudo keeps (the values travel in the call's environment)
    requeue: bool = True  # False: a job its node's failure ended is not run again behind its user's back
    warning_seconds: int = 0  # this long before the time limit Slurm signals the batch step (`signal`)
    signal: str = ""
    array: str = ""  # a job array's indices and limit: '0-11%4'
    comment: str = ""  # after the site's options, which must not replace it


def as_user(slurm: SlurmSettings, username: str, env_names: list[str] | tuple[str, ...] = ()) -> list[str]:
    """sudo prefix running a command as `username`, keeping only the named variables.

    Values travel in the environment of the call, never on the command line.
    """
    argv = [slurm.sudo, "-n"]
    if env_names:
        argv.append("--preserve-env=" + ",".join(env_names))
    return argv + ["-u", username, "--"]


def site_options(slurm: SlurmSettings, account: str = "", qos: str = "") -> list[str]:
    """The admin's account, QOS and reservation for every job the portal submits; `account` and `qos`: the ones
    the user chose instead (checked against their associations with the options)."""
    for what, name in (("account", account), ("QOS", qos)):
        if name and not SLURM_NAME.fullmatch(name):  # never into a command line unchecked
            raise ValueError(f"invalid Slurm {what} {name!r}")
    chosen = {"account": account or slurm.account, "qos": qos or slurm.qos, "reservation": slurm.reservation}
    return [f"--{option}={value}" for option, value in chosen.items() if value]


def gres_option(gpus: int, gpu_type: str = "") -> str:
    """--gres for a job's GPUs per node, of one type if it asked for one ('--gres=gpu:a100:2')."""
    if gpu_type:
        if not GPU_TYPE.fullmatch(gpu_type):  # checked with the options already; never into a command line
            raise ValueError(f"invalid GPU type {gpu_type!r}")
        return f"--gres=gpu:{gpu_type}:{gpus}"
    return f"--gres=gpu:{gpus}"


def sbatch_argv(slurm: SlurmSettings, job: JobRequest) -> list[str]:
    """sbatch as the job's user: one task per node, the site's options, then the job's own."""
    bad = [n for n in job.env_names if not ENV_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"invalid environment variable names: {bad}")
    argv = as_user(slurm, job.user.name, job.env_names) + [slurm.sbatch, "--parsable"]
    if not job.requeue:
        argv.append("--no-requeue")
    argv += [
        f"--job-name={job.name}",
        f"--nodes={job.nodes}",
        "--ntasks=1" if job.nodes == 1 else "--ntasks-per-node=1",
        f"--cpus-per-task={job.cpus}",
        f"--mem={job.memory}",
    ]
    if job.gpus:
        argv.append(gres_option(job.gpus, job.gpu_type))
    elif job.shards:
        argv.append(f"--gres=shard:{int(job.shards)}")
    argv += [f"--time={job.time}", f"--partition={job.partition}"]
    if job.warning_seconds:
        # B: the batch step only (a session's dsportal-singleuser, whose port keeper passes it on)
        argv.append(f"--signal=B:{job.signal}@{job.warning_seconds}")
    argv += site_options(slurm, job.account, job.qos)
    if job.array:
        argv.append(f"--array={job.array}")
    if job.comment:
        argv.append(f"--comment={job.comment}")
    return argv + [
        f"--output={job.output}",
        f"--chdir={job.chdir}",
        # ALL = exactly the environment sudo hands sbatch: its own basics and the named variables (env_reset).
        # Naming variables here instead would make Slurm set SLURM_GET_USER_ENV and run the user's login shell.
        "--export=ALL",
    ]

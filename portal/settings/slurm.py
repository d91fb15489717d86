"""The admin YAML's section slurm: the partitions users may choose, what a session gets, Slurm's commands."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from .kinds import (
    AbsPath,
    Command,
    Flag,
    GroupName,
    Label,
    OptionalLabel,
    OptionalSize,
    OptionalSlurmName,
    SbatchOption,
    Size,
    SlurmName,
    Timeout,
    Username,
    integer,
    number,
)
from .section import Section, key, rule_error, section

# Options the portal sets itself; an admin line must not fight them.
MANAGED_SBATCH_OPTIONS = frozenset(
    "job-name nodes ntasks cpus-per-task mem mem-per-cpu mem-per-gpu gres gpus time partition "
    "account qos reservation output error chdir export get-user-env uid gid parsable wrap signal".split()
)


class Partition(Section):
    name: SlurmName = key(help="Slurm partition name, as sinfo shows it.")
    max_gpus: integer(0, 16) = key(
        help="Most GPUs one session may ask for here (GPUs of one node); 0 = a CPU-only partition (sessions there "
        "get slurm.cpu_only_cores and slurm.cpu_only_memory)."
    )
    default: Flag = key(False, "Preselect this partition in the form. At most one; else the first.")
    display_name: OptionalLabel = key("", "Label shown in the form; empty = the partition name.")
    max_nodes: integer(1, 1024) = key(
        1, "Most nodes one job run from the portal (Run as a job) may span here; sessions always use one node."
    )


class ShardSettings(Section):
    per_gpu: integer(0, 64) = key(
        0,
        "Shares each GPU is cut into where its nodes have Slurm's gres/shard (gres.conf: Name=shard Count=N "
        "File=/dev/nvidiaK for each GPU; slurm.conf: GresTypes=gpu,shard and Gres=...,shard:N x GPUs). The form "
        "then offers 1 to per_gpu - 1 shares of a GPU beside whole GPUs, on the partitions whose nodes have "
        "shards. 0 = no shares offered. A share divides neither the GPU's memory nor its compute: sessions on "
        "shares of one GPU use it together (only MIG partitions a GPU).",
        example=4,
    )
    cores: integer(0, 256) = key(0, "CPU cores one share brings; 0 = slurm.cores_per_gpu / per_gpu, at least 1.")
    memory: OptionalSize = key("", "Memory one share brings (M, G or T); empty = slurm.memory_per_gpu / per_gpu.")


class SlurmSettings(Section):
    partitions: Annotated[list[Partition], Field(min_length=1)] = key(
        [{"name": "gpu", "max_gpus": 4, "default": True, "display_name": ""}],
        "Partitions users may choose.",
        example=[{"name": "sxm2", "max_gpus": 4, "default": True, "display_name": "V100 SXM2 (4 GPUs per node)"}],
    )
    gpu_types: dict[SlurmName, Label] = key(
        {},
        "Labels of the GPU types Slurm knows (gres.conf Type=, e.g. gpu:a100:4), shown in the form. A partition "
        "with GPUs of several types lets the user choose one (or any); the types come from Slurm. A type "
        "without a label shows its Slurm name.",
        example={"v100": "V100 32 GB", "a100": "A100 80 GB"},
    )
    gpu_memory: dict[SlurmName, Size] = key(
        {},
        "Memory of one GPU of each type (M, G or T), a MIG profile's too (e.g. a100_1g.10gb: 10G): the form says it "
        "beside the type's label (a MIG slice's memory is its own, not its GPU's).",
        example={"a100": "80G", "a100_1g.10gb": "10G"},
    )
    shards: ShardSettings = section(ShardSettings, "Shares of a GPU (Slurm's gres/shard) offered beside whole GPUs.")
    hidden_gpu_types: list[SlurmName] = key(
        [], "GPU types users may not ask for by name (they may still get them as 'any type').", example=["t4"]
    )
    cores_per_gpu: integer(1, 256) = key(8, "CPU cores that come with each GPU.")
    memory_per_gpu: Size = key("48G", "Memory that comes with each GPU (M, G or T).")
    cpu_only_cores: integer(1, 256) = key(4, "CPU cores of a session with 0 GPUs.")
    cpu_only_memory: Size = key("16G", "Memory of a session with 0 GPUs.")
    default_hours: number(0, 8760) = key(8, "Session length preselected in the form, in hours.")
    max_hours: number(0, 8760) = key(12, "Longest session a user may ask for, in hours.")
    account: OptionalSlurmName = key("", "Slurm account charged for sessions; empty = the user's default.")
    qos: OptionalSlurmName = key("", "Slurm QOS for sessions; empty = default.")
    qos_choices: dict[SlurmName, Label] = key(
        {},
        "QOS users may choose for a session, each with its label (the form shows each QOS's MaxWall from Slurm "
        "beside it). Empty = no choice: slurm.qos, else the association's default. A QOS the user's account does "
        "not allow, or hours above its MaxWall, are refused before anything is submitted.",
        example={"short": "Short: higher priority", "long": "Long"},
    )
    reservation: OptionalSlurmName = key("", "Slurm reservation for sessions; empty = none.")
    extra_sbatch: list[SbatchOption] = key([], "Extra #SBATCH lines (admin only), e.g. --constraint=v100.")
    sbatch: Command = key("sbatch", "The sbatch command.")
    squeue: Command = key("squeue", "The squeue command.")
    scancel: Command = key("scancel", "The scancel command.")
    sudo: Command = key("sudo", "sudo, used to submit and cancel jobs as the user.")
    sinfo: Command = key("sinfo", "The sinfo command (dsportal doctor).")
    sacctmgr: Command = key("sacctmgr", "The sacctmgr command: which Slurm accounts each user may charge.")
    sshare: Command = key("sshare", "The sshare command: each account's GPU allocation left and each user's fairshare.")
    accounts_seconds: integer(5, 86400) = key(
        300,
        "Seconds one answer about every user's Slurm accounts (sacctmgr) is reused for everyone: the accounts "
        "a user may choose, and the check of the one a start names.",
    )
    sacct: Command = key("sacct", "The sacct command: finished jobs and their use, from Slurm's accounting (slurmdbd).")
    min_uid: integer(1, 2**31 - 1) = key(
        1000, "Lowest uid that may run sessions: system accounts (and root, uid 0, always) are refused."
    )
    deny_users: list[Username] = key(["root"], "Accounts that may never run sessions, whatever their uid.")
    user_groups: list[GroupName] = key(
        [],
        "Unix groups of portal users (the sudoers rule's runas groups); empty = any account from min_uid.",
        example=["datasci"],
    )
    command_timeout: Timeout = key(20, "Seconds before a Slurm command counts as hung.")
    start_timeout: integer(10, 86400) = key(
        900, "Seconds a session may wait in the queue and start before it is given up."
    )
    stop_timeout: integer(5, 3600) = key(
        60,
        "Seconds a stop retries scancel and waits for the job to leave the queue; after that the job "
        "stays marked stopping and the hub's reconciler keeps cancelling it.",
    )
    cluster_info_seconds: integer(1, 3600) = key(
        15,
        "Seconds one answer about free GPUs (sinfo) and start estimates is reused for everyone; "
        "Slurm calls then do not grow with the number of users looking.",
    )
    job_name: SlurmName = key(
        "dsportal",
        "Name of every session job. The portal owns the jobs of this name: one it does not track "
        "(e.g. from an sbatch that timed out) is cancelled. Give each portal on a cluster its own name.",
    )
    reconcile_seconds: integer(5, 86400) = key(
        60,
        "Seconds between the hub's checks for session jobs no session owns; one found so at two checks in a row "
        "is cancelled.",
    )
    allow_extend: Flag = key(
        False,
        "Users may extend a running session (JupyterLab's status bar, the hub's home page). Needs the "
        "sudoers rule for dsportal-extend-session (deploy/sudoers.d/dsportal), or a hub account that is a "
        "Slurm operator.",
    )
    extend_step_hours: number(0, 168) = key(1, "Hours one extension adds.")
    extend_command: AbsPath = key(
        "/opt/dsportal/venv/bin/dsportal-extend-session",
        "The root-owned helper the hub runs through sudo to raise a session's time limit (it checks the job "
        "is a portal session and the limits, then runs scontrol update); the sudoers rule names this path.",
    )
    scontrol: Command = key("scontrol", "The scontrol command (the extension helper).")
    extend_max_hours: number(0, 8760) = key(
        24, "Longest a session may last with its extensions, in hours (the partition's MaxTime also applies)."
    )

    @model_validator(mode="after")
    def _rules(self) -> SlurmSettings:
        problems: list = []
        names = [p.name for p in self.partitions]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            problems.append((".partitions", dup, "each partition name may appear once"))
        defaults = [p.name for p in self.partitions if p.default]
        if len(defaults) > 1:
            problems.append((".partitions", ", ".join(defaults), "at most one partition may have default: true"))
        if self.extend_max_hours < self.max_hours and self.allow_extend:
            problems.append(
                (
                    ".extend_max_hours",
                    self.extend_max_hours,
                    f"must be at least max_hours ({self.max_hours:g}): it is the length with extensions",
                )
            )
        if self.default_hours > self.max_hours:
            problems.append((".default_hours", self.default_hours, f"must not exceed max_hours ({self.max_hours:g})"))
        for i, line in enumerate(self.extra_sbatch):
            option = line[2:].split("=", 1)[0]
            if option in MANAGED_SBATCH_OPTIONS:
                problems.append(
                    (f".extra_sbatch[{i}]", line, f"--{option} is set by the portal itself; remove this line")
                )
        if problems:
            raise rule_error(*problems)
        return self

    @property
    def default_partition(self) -> Partition:
        return next((p for p in self.partitions if p.default), self.partitions[0])

    def gpu_label(self, gpu_type: str) -> str:
        """How the pages name a GPU type: the admin's label, else Slurm's name."""
        return self.gpu_types.get(gpu_type, gpu_type)

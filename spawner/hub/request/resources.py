"""Resource math: what a session of N GPUs gets, and how Slurm spells it."""

from __future__ import annotations

from dataclasses import dataclass

from portal.settings import SlurmSettings, size_to_mib

from ...slurmgres import gpus_held, share_words
from ...slurmvocab import time_limit
from .options import SessionRequest


@dataclass(frozen=True)
class Resources:
    partition: str
    gpus: int
    cpus: int
    memory_mib: int
    minutes: int
    gpu_type: str = ""  # "" for any type
    gpu_label: str = ""  # how the pages name the type (the admin's label)
    account: str = ""  # the Slurm account the user chose; "" for the admin's or the user's default
    qos: str = ""  # the QOS the user chose; "" for the admin's or the association's default
    shards: int = 0  # shares of one GPU (Slurm's gres/shard), instead of whole GPUs
    per_gpu: int = 0  # the shares a GPU is cut into (slurm.shards.per_gpu)

    @property
    def gpu_share(self) -> float:
        """The GPUs the session holds, a share as its fraction: what sessions.max_gpus_per_user counts (a share
        whose GPU's count of shares the admin no longer says, a whole GPU)."""
        return gpus_held(self.gpus, self.shards, self.per_gpu)

    @property
    def memory(self) -> str:
        return slurm_memory(self.memory_mib)

    @property
    def time(self) -> str:
        """Slurm --time value: 'HH:MM:SS', or 'D-HH:MM:SS' from one day on."""
        return time_limit(self.minutes)

    def summary(self) -> str:
        """The line a user sees, e.g. '2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2'."""
        gpus = "no GPU" if self.gpus == 0 else f"{self.gpus} GPU" + ("s" if self.gpus > 1 else "")
        if self.shards:
            gpus = share_words(self.shards, self.per_gpu)
        if self.gpus and self.gpu_type:
            gpus += f" ({self.gpu_label or self.gpu_type})"
        memory = self.memory_mib / 1024
        charged = (f", charged to {self.account}" if self.account else "") + (f", QOS {self.qos}" if self.qos else "")
        return (
            f"{gpus} · {self.cpus} cores · {memory:g} GB RAM · {duration_words(self.minutes)} on {self.partition}"
            + charged
        )


def slurm_memory(mib: int) -> str:
    """Slurm --mem value: whole gibibytes as 'NG', otherwise 'NM'."""
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"


def duration_words(minutes: int) -> str:
    """What the job really gets, in whole minutes as Slurm counts: '1 min', '1 h 30 min', '8 h'."""
    hours, rest = divmod(minutes, 60)
    parts = ([f"{hours} h"] if hours else []) + ([f"{rest} min"] if rest or not hours else [])
    return " ".join(parts)


def allocation(gpus: int, slurm: SlurmSettings, shards: int = 0) -> tuple[int, int]:
    """The portal's one resource rule: (cores, memory in MiB) that a session of `gpus` GPUs, or of `shards`
    shares of one GPU, gets.

    Each GPU brings slurm.cores_per_gpu cores and slurm.memory_per_gpu; each share slurm.shards.cores and
    slurm.shards.memory (by default a GPU's divided by slurm.shards.per_gpu); a session without either gets
    slurm.cpu_only_cores and slurm.cpu_only_memory.  The form (spawner/hub/request/form.py), what is free
    (spawner/hub/slurm/clusterinfo.py) and the job use it.
    """
    if gpus:
        return gpus * slurm.cores_per_gpu, gpus * size_to_mib(slurm.memory_per_gpu)
    if shards:
        return shards * shard_cores(slurm), shards * shard_memory_mib(slurm)
    return slurm.cpu_only_cores, size_to_mib(slurm.cpu_only_memory)


def shard_cores(slurm: SlurmSettings) -> int:
    """The cores one share of a GPU brings (the admin's, else a GPU's divided by the shares, at least 1)."""
    return slurm.shards.cores or max(1, slurm.cores_per_gpu // max(1, slurm.shards.per_gpu))


def shard_memory_mib(slurm: SlurmSettings) -> int:
    """The memory one share of a GPU brings, in MiB (the admin's, else a GPU's divided by the shares)."""
    if slurm.shards.memory:
        return size_to_mib(slurm.shards.memory)
    return max(1, size_to_mib(slurm.memory_per_gpu) // max(1, slurm.shards.per_gpu))


def resources_for(request: SessionRequest, slurm: SlurmSettings) -> Resources:
    cpus, memory = allocation(request.gpus, slurm, request.shards)
    return Resources(
        partition=request.partition,
        gpus=request.gpus,
        cpus=cpus,
        memory_mib=memory,
        minutes=max(1, round(request.hours * 60)),  # Slurm counts whole minutes; summary() says which
        gpu_type=request.gpu_type,
        gpu_label=slurm.gpu_label(request.gpu_type) if request.gpu_type else "",
        account=request.account,
        qos=request.qos,
        shards=request.shards,
        per_gpu=slurm.shards.per_gpu if request.shards else 0,  # 0: counted as a whole GPU (gpu_share)
    )

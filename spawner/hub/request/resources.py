"""Resource math: what a session of N GPUs gets, and how Slurm spells it."""

from __future__ import annotations

from dataclasses import dataclass

from portal.settings import SlurmSettings, size_to_mib

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


def allocation(gpus: int, slurm: SlurmSettings) -> tuple[int, int]:
    """The portal's one resource rule: (cores, memory in MiB) that a session of `gpus` GPUs gets.

    Each GPU brings slurm.cores_per_gpu cores and slurm.memory_per_gpu; a session
    without GPUs gets slurm.cpu_only_cores and slurm.cpu_only_memory.  The form
    (spawner/hub/request/form.py), what is free (spawner/hub/slurm/clusterinfo.py) and the job use it.
    """
    if gpus:
        return gpus * slurm.cores_per_gpu, gpus * size_to_mib(slurm.memory_per_gpu)
    return slurm.cpu_only_cores, size_to_mib(slurm.cpu_only_memory)


def resources_for(request: SessionRequest, slurm: SlurmSettings) -> Resources:
    cpus, memory = allocation(request.gpus, slurm)
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
    )

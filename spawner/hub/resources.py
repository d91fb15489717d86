"""Resource math: what a session of N GPUs gets, and how Slurm spells it."""

from __future__ import annotations

from dataclasses import dataclass

from portal.settings import SlurmSettings, size_to_mib

from .options import SessionRequest


@dataclass(frozen=True)
class Resources:
    partition: str
    gpus: int
    cpus: int
    memory_mib: int
    minutes: int

    @property
    def memory(self) -> str:
        """Slurm --mem value: whole gibibytes as 'NG', otherwise 'NM'."""
        if self.memory_mib % 1024 == 0:
            return f"{self.memory_mib // 1024}G"
        return f"{self.memory_mib}M"

    @property
    def time(self) -> str:
        """Slurm --time value: 'HH:MM:SS', or 'D-HH:MM:SS' from one day on."""
        days, rest = divmod(self.minutes, 24 * 60)
        hours, minutes = divmod(rest, 60)
        clock = f"{hours:02d}:{minutes:02d}:00"
        return f"{days}-{clock}" if days else clock

    def summary(self) -> str:
        """The line a user sees, e.g. '2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2'."""
        gpus = "no GPU" if self.gpus == 0 else f"{self.gpus} GPU" + ("s" if self.gpus > 1 else "")
        memory = self.memory_mib / 1024
        return f"{gpus} · {self.cpus} cores · {memory:g} GB RAM · {duration_words(self.minutes)} on {self.partition}"


def duration_words(minutes: int) -> str:
    """What the job really gets, in whole minutes as Slurm counts: '1 min', '1 h 30 min', '8 h'."""
    hours, rest = divmod(minutes, 60)
    parts = ([f"{hours} h"] if hours else []) + ([f"{rest} min"] if rest or not hours else [])
    return " ".join(parts)


def resources_for(request: SessionRequest, slurm: SlurmSettings) -> Resources:
    if request.gpus:
        cpus = request.gpus * slurm.cores_per_gpu
        memory = request.gpus * size_to_mib(slurm.memory_per_gpu)
    else:
        cpus = slurm.cpu_only_cores
        memory = size_to_mib(slurm.cpu_only_memory)
    return Resources(
        partition=request.partition,
        gpus=request.gpus,
        cpus=cpus,
        memory_mib=memory,
        minutes=max(1, round(request.hours * 60)),  # Slurm counts whole minutes; summary() says which
    )

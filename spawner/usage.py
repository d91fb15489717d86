"""What a session used against what it was given, and one line of advice (every side; standard library only).

The session's own server tallies its GPUs (NVML) and its processes' CPU time
and memory while it runs (spawner/jupyter/usage/sampler.py) and reports the
tally to the hub; Slurm's accounting (sacct, through slurmdbd) gives the
job's CPU time and peak memory after it ended.  `summarise` turns either or
both into the summary the home page's history and JupyterLab show.  Pure:
tested by equality.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from .slurmgres import share_words

BUSY_UTILISATION = 1  # NVML's utilisation: the share of the sample period in which a kernel ran on the GPU
WORKED_SHARE = 0.05  # a GPU busy in at least 5 % of the samples did work
IDLE_CPU_SHARE = 0.1  # less than a tenth of one core between two samples: the session did nothing then
LOW_CPU_EFFICIENCY = 25  # percent: a CPU-only session below it could have been smaller or shorter
MEMORY_NEAR_LIMIT = 90  # percent of the allocation
MAX_GPUS = 64  # a report naming more GPUs is refused (no node has more)
MAX_SAMPLES = 10**9
MIN_SAMPLE_SECONDS = 1  # samples come usage.sample_seconds (2 at least) apart
MAX_GPU_WATTS = 2000  # no GPU draws more: a report of more energy than this over its seconds is refused
MIN_JUDGED_SAMPLES = 2  # samples (three readings) before the advice judges what the session's own tally shows


@dataclass
class GpuTally:
    """One GPU's readings so far."""

    index: int
    samples: int = 0
    busy_samples: int = 0  # samples with utilisation > 0
    utilization_sum: int = 0
    utilization_peak: int = 0
    memory_peak_mib: int = 0
    memory_total_mib: int = 0
    energy_j: float = 0.0  # the energy it drew between the first reading and the last, where NVML reports it
    energy_counter_mj: int = 0  # NVML's counter at the last reading (0: none read)

    def add(self, utilization: int, memory_used_mib: int, memory_total_mib: int, energy_mj: int | None = None) -> None:
        if energy_mj is not None:
            if 0 < self.energy_counter_mj <= energy_mj:  # a counter that went back (a driver reload) adds nothing
                self.energy_j += (energy_mj - self.energy_counter_mj) / 1000
            self.energy_counter_mj = energy_mj
        self.samples += 1
        self.busy_samples += utilization >= BUSY_UTILISATION
        self.utilization_sum += utilization
        self.utilization_peak = max(self.utilization_peak, utilization)
        self.memory_peak_mib = max(self.memory_peak_mib, memory_used_mib)
        self.memory_total_mib = memory_total_mib

    @property
    def mean(self) -> float:
        return self.utilization_sum / self.samples if self.samples else 0.0

    @property
    def worked(self) -> bool:
        return self.samples > 0 and self.busy_samples / self.samples >= WORKED_SHARE


@dataclass
class UsageTally:
    """A session's readings so far, as its server reports them to the hub (JSON: to_dict / from_dict)."""

    gpus: list[GpuTally] = field(default_factory=list)
    samples: int = 0
    idle_samples: int = 0  # samples in which no GPU worked and the processes used under a tenth of a core
    cpu_seconds: float = 0.0  # CPU time of the session's processes so far
    memory_peak_mib: int = 0  # the most memory the session's processes held at once
    seconds: float = 0.0  # from the first sample to the last

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> UsageTally:
        """A reported tally, checked: ValueError in words for anything else (it comes from the user's session)."""
        if not isinstance(data, dict) or set(data) - {f for f in cls.__dataclass_fields__}:
            raise ValueError("a usage report is an object with the keys of a tally")
        gpus = data.get("gpus", [])
        if not isinstance(gpus, list) or len(gpus) > MAX_GPUS:
            raise ValueError(f"gpus must be a list of at most {MAX_GPUS} GPU tallies")
        tally = cls(
            gpus=[_gpu(g) for g in gpus],
            samples=_count(data, "samples"),
            idle_samples=_count(data, "idle_samples"),
            cpu_seconds=_amount(data, "cpu_seconds"),
            memory_peak_mib=_count(data, "memory_peak_mib"),
            seconds=_amount(data, "seconds"),
        )
        if tally.idle_samples > tally.samples:
            raise ValueError("idle_samples cannot exceed samples")
        if tally.seconds < tally.samples * MIN_SAMPLE_SECONDS:
            raise ValueError(f"seconds cannot be less than {MIN_SAMPLE_SECONDS} s for each sample")
        if any(g.energy_j > MAX_GPU_WATTS * tally.seconds for g in tally.gpus):
            raise ValueError(f"a GPU's energy cannot exceed {MAX_GPU_WATTS} W over the tally's seconds")
        return tally


def _count(data: dict, name: str, high: int = MAX_SAMPLES) -> int:
    value = data.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise ValueError(f"{name} must be a whole number from 0 to {high}")
    return value


def _amount(data: dict, name: str) -> float:
    value = data.get(name, 0)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1e12:
        raise ValueError(f"{name} must be a number from 0 to 1e12")
    return float(value)


def _gpu(data: object) -> GpuTally:
    if not isinstance(data, dict) or set(data) - set(GpuTally.__dataclass_fields__):
        raise ValueError("each GPU tally is an object with the keys of a GPU tally")
    gpu = GpuTally(
        index=_count(data, "index", MAX_GPUS),
        samples=_count(data, "samples"),
        busy_samples=_count(data, "busy_samples"),
        utilization_sum=_count(data, "utilization_sum", 100 * MAX_SAMPLES),
        utilization_peak=_count(data, "utilization_peak", 100),
        memory_peak_mib=_count(data, "memory_peak_mib", 10**8),
        memory_total_mib=_count(data, "memory_total_mib", 10**8),
        energy_j=_amount(data, "energy_j"),
        energy_counter_mj=_count(data, "energy_counter_mj", 10**18),
    )
    if gpu.busy_samples > gpu.samples or gpu.utilization_sum > 100 * gpu.samples:
        raise ValueError("a GPU tally's busy samples and utilisation cannot exceed its samples")
    return gpu


@dataclass(frozen=True)
class JobUse:
    """What Slurm's accounting says a finished job used (sacct: TotalCPU, AllocCPUS, ElapsedRaw, MaxRSS, AllocTRES)."""

    cpu_seconds: float
    cpus: int
    elapsed_seconds: int
    memory_peak_mib: int
    memory_mib: int  # allocated
    gpus: int  # allocated


@dataclass(frozen=True)
class Allocation:
    """What the session was given."""

    gpus: float  # a share of a GPU (Slurm's gres/shard) as its fraction
    cpus: int
    memory_mib: int
    per_gpu: int = 0  # shares a GPU is cut into where the session's partition offers them (0: none offered)


def _percent(part: float, whole: float, most: int = 1000) -> int | None:
    """part of whole in percent, at most `most`; None without a whole.  A reported tally is the user's: a
    near-zero whole must not make an infinite share (round(inf) raises, and the summary is made at the end)."""
    if not whole > 0:
        return None
    share = 100 * part / whole
    return round(min(share, most)) if math.isfinite(share) else most


def _gib(mib: int) -> str:
    return f"{mib / 1024:.1f} GB"


def duration(hours: float) -> str:
    """'under 1 min', '45 min', '2.5 h'."""
    if hours * 60 < 1:
        return "under 1 min"
    return f"{round(hours * 60)} min" if hours < 1 else f"{hours:.1f} h"


def summarise(tally: UsageTally | None, job: JobUse | None, given: Allocation) -> dict:
    """The session's use against its allocation, with one line of advice.

    Slurm's accounting wins for CPU and memory when it is there (it counts
    every process of the job); the session's own tally serves until then.
    GPUs come from the tally alone: Slurm does not measure them.
    """
    gpus = [
        {
            "index": g.index,
            "mean": round(g.mean),
            "peak": g.utilization_peak,
            "memory_peak_mib": g.memory_peak_mib,
            "memory_total_mib": g.memory_total_mib,
            "worked": g.worked,
            "energy_wh": round(g.energy_j / 3600, 3) if g.energy_counter_mj else None,
        }
        for g in (tally.gpus if tally else [])
    ]
    energies = [g["energy_wh"] for g in gpus if g["energy_wh"] is not None]
    if job is not None:
        seconds, cpu_seconds, memory_peak = job.elapsed_seconds, job.cpu_seconds, job.memory_peak_mib
        if not memory_peak and tally is not None:  # jobacct_gather samples every 30 s: a short job may have none
            memory_peak = tally.memory_peak_mib
        cpus, memory = job.cpus or given.cpus, job.memory_mib or given.memory_mib
    elif tally is not None:
        seconds, cpu_seconds, memory_peak = tally.seconds, tally.cpu_seconds, tally.memory_peak_mib
        cpus, memory = given.cpus, given.memory_mib
    else:
        return {"source": "none", "advice": "", "lines": ["No usage was recorded for this session."]}
    summary = {
        "source": "slurm" if job is not None else "session",
        "hours": round(seconds / 3600, 3),
        "gpus_given": given.gpus,
        "per_gpu": given.per_gpu,
        "gpus": gpus,
        "gpus_worked": sum(g["worked"] for g in gpus),
        "cpu_efficiency": _percent(cpu_seconds, cpus * seconds, most=100),
        "cpus": cpus,
        "memory_peak_mib": memory_peak,
        "memory_mib": memory,
        "memory_share": _percent(memory_peak, memory),
        "idle_share": _percent(tally.idle_samples, tally.samples) if tally and tally.samples else None,
        "gpu_energy_wh": round(sum(energies), 3) if energies else None,
    }
    summary["advice"] = advice(summary, samples=tally.samples if tally else 0)
    summary["lines"] = lines(summary)
    return summary


def advice(summary: dict, samples: int) -> str:
    """One line: the first of GPUs that sat idle, memory near its limit, cores that sat idle; else that it fit,
    or, where that rests on the session's own tally and it has fewer than MIN_JUDGED_SAMPLES `samples`, that it
    cannot judge yet (a GPU read once or never is no GPU that did nothing, nor one that fitted)."""
    given, worked = summary["gpus_given"], summary["gpus_worked"]
    judged = samples >= MIN_JUDGED_SAMPLES
    if given and judged and summary["gpus"]:
        if worked == 0:
            which = "Your GPU did no work" if given <= 1 else f"None of your {given:g} GPUs did work"
            return f"{which}; next time ask for 0 GPUs, or check that your code uses CUDA."
        if 1 <= worked < given:
            return f"{worked} of {given:g} GPUs did work; next time ask for {worked}."
        fits = share_fits(summary)
        if fits:
            return fits
    share = summary["memory_share"]
    if share is not None and share >= MEMORY_NEAR_LIMIT:
        return f"Memory peaked at {_gib(summary['memory_peak_mib'])} of {_gib(summary['memory_mib'])}; " + (
            "ask for more shares of a GPU (they bring more memory) or load less data at once."
            if 0 < summary["gpus_given"] < 1
            else "ask for one more GPU (it brings more memory) or load less data at once."
        )
    efficiency = summary["cpu_efficiency"]
    slurm = summary["source"] == "slurm"
    if not given and efficiency is not None and efficiency < LOW_CPU_EFFICIENCY and (slurm or judged):
        return f"Your {summary['cpus']} cores were {efficiency}% busy; a shorter session would have done."
    if not judged and (given or not slurm):
        return f"Too short to judge the session's size ({samples} of the {MIN_JUDGED_SAMPLES} readings it takes)."
    if given and not summary["gpus"]:
        return "Its GPUs could not be read (the session's log says why), so their size cannot be judged."
    if 0 < given < 1:
        return "Your share of a GPU did work; the size fitted."
    if given:
        return "Your GPU did work; the size fitted." if given == 1 else f"All {given:g} GPUs did work; the size fitted."
    return "The session's size fitted its work."


def share_fits(summary: dict) -> str:
    """Advice for one whole GPU whose memory peak and mean work stayed within one share's part of it, where the
    partition offers shares ("" otherwise).  A share divides neither: the test is that the session would have
    left room for the GPU's other shares."""
    per_gpu, gpus = summary.get("per_gpu", 0), summary["gpus"]
    if not per_gpu or summary["gpus_given"] != 1 or len(gpus) != 1:
        return ""
    gpu = gpus[0]
    if not gpu["memory_total_mib"] or gpu["memory_peak_mib"] * per_gpu > gpu["memory_total_mib"]:
        return ""
    if gpu["mean"] * per_gpu > 100:
        return ""
    return (
        f"Your GPU used at most {_gib(gpu['memory_peak_mib'])} of its {_gib(gpu['memory_total_mib'])} and was "
        f"{gpu['mean']}% busy on average: {share_words(1, per_gpu)} would have fitted; next time ask for a share "
        "of a GPU (it often starts sooner)."
    )


def lines(summary: dict) -> list[str]:
    """The summary in words, one line each: GPUs, CPU, memory, idle time, advice."""
    out = [
        f"GPU {g['index']}: {g['mean']}% on average, peak {g['peak']}%, "
        f"memory peak {_gib(g['memory_peak_mib'])} of {_gib(g['memory_total_mib'])}"
        for g in summary["gpus"]
    ]
    if summary.get("gpu_energy_wh") is not None:
        out.append(f"GPU energy: {summary['gpu_energy_wh']:,.1f} Wh (NVML)")
    if summary["cpu_efficiency"] is not None:
        out.append(f"CPU: {summary['cpu_efficiency']}% of {summary['cpus']} cores over {duration(summary['hours'])}")
    if summary["memory_share"] is not None:
        out.append(
            f"Memory: peak {_gib(summary['memory_peak_mib'])} of {_gib(summary['memory_mib'])} "
            f"({summary['memory_share']}%)"
        )
    if summary["idle_share"] is not None:
        out.append(f"Idle: {summary['idle_share']}% of the time")
    if summary["advice"]:
        out.append(summary["advice"])
    return out

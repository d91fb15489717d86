"""The job's GPUs as NVML reads them (the user's Jupyter server, on the compute node, as the user).

Only the GPUs Slurm gave the job (CUDA_VISIBLE_DEVICES: indices or UUIDs);
on a node with `ConstrainDevices=yes` NVML sees only those anyway.  Every
NVML call goes through one object (`nvml`, the `pynvml` module of
nvidia-ml-py by default), the seam tests replace with recorded answers.
A node without NVIDIA GPUs or driver gives "no GPU readings", never an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

_JOB_CGROUP = re.compile(r"/job_([0-9]+)(?:/|$)", re.MULTILINE)


@dataclass(frozen=True)
class GpuReading:
    index: int
    name: str
    utilization: int  # percent of the last sample period
    memory_used_mib: int
    memory_total_mib: int
    processes: int  # compute processes holding memory on it
    energy_mj: int | None = None  # NVML's energy counter (mJ since the driver loaded); None where it has none
    own_processes: int | None = None  # where the GPU is shared (Slurm's shards): those of this job; else None

    @property
    def in_use(self) -> bool:
        if self.own_processes is not None:  # a shared GPU is busy with the neighbours' work too: this job's only
            return self.own_processes > 0
        return self.utilization > 0 or self.processes > 0

    def to_dict(self) -> dict:
        return asdict(self)


def _energy(nvml, handle) -> int | None:
    """The GPU's energy counter in mJ, where NVML reports power (Volta and later); None where it does not."""
    try:
        return int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    except Exception:  # noqa: BLE001 - NVMLError_NotSupported, or an older library without the call
        return None


class NoGpuReadings(Exception):
    """Why there are no readings, in words (no driver, no GPUs in this job)."""


def visible(cuda_visible_devices: str | None) -> list[str] | None:
    """The job's GPUs as CUDA names them ('0,1' -> ['0', '1']); None = no such variable (all GPUs)."""
    if cuda_visible_devices is None:
        return None
    return [d.strip() for d in cuda_visible_devices.split(",") if d.strip() and d.strip() != "NoDevFiles"]


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def load_nvml():
    try:
        import pynvml  # nvidia-ml-py
    except ImportError as e:
        raise NoGpuReadings(f"no GPU readings: nvidia-ml-py is not installed ({e})") from None
    return pynvml


def job_of_cgroup(text: str) -> str:
    """The Slurm job a process's /proc/PID/cgroup places it in ('.../job_42/step_batch/...' -> '42'), else ""."""
    found = _JOB_CGROUP.search(text)
    return found.group(1) if found else ""


def this_jobs_process(proc: Path = Path("/proc")) -> Callable[[int], bool]:
    """Whether a PID NVML names is a process of the job this one runs in (the same Slurm job cgroup): on a GPU
    shared in shards, the neighbours' processes are other jobs'."""
    try:
        mine = job_of_cgroup((proc / "self" / "cgroup").read_text())
    except OSError:
        mine = ""

    def own(pid: int) -> bool:
        try:
            return bool(mine) and job_of_cgroup((proc / str(int(pid)) / "cgroup").read_text()) == mine
        except (OSError, ValueError):  # gone, another pid namespace's, or hidden: not this job's
            return False

    return own


def read_gpus(nvml, devices: list[str] | None, own: Callable[[int], bool] | None = None) -> list[GpuReading]:
    """One reading per GPU of the job, or NoGpuReadings; `own`: on a shared GPU, which of its processes are this
    job's (their count is then what says the session uses it)."""
    if devices == []:
        raise NoGpuReadings("no GPU readings: this session has no GPU")
    try:
        nvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - pynvml raises NVMLError and OSError subclasses for a missing driver
        raise NoGpuReadings(f"no GPU readings: no NVIDIA driver on this node ({e})") from None
    try:
        handles = []
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            if devices is None or str(i) in devices or _text(nvml.nvmlDeviceGetUUID(handle)) in devices:
                handles.append((i, handle))
        readings = []
        for i, handle in handles:
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            readings.append(
                GpuReading(
                    index=i,
                    name=_text(nvml.nvmlDeviceGetName(handle)),
                    utilization=int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                    memory_used_mib=int(memory.used) // (1024 * 1024),
                    memory_total_mib=int(memory.total) // (1024 * 1024),
                    processes=len(processes),
                    energy_mj=_energy(nvml, handle),
                    own_processes=None if own is None else sum(1 for p in processes if own(p.pid)),
                )
            )
        return readings
    except Exception as e:  # noqa: BLE001 - a GPU that fails to answer is no reading, not a broken session
        raise NoGpuReadings(f"no GPU readings: NVML failed ({e})") from None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass

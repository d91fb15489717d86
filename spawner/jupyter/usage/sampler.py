"""The session's own record of what it used (the user's Jupyter server, in the Slurm job, as the user).

Every `usage.sample_seconds` the server reads the job's GPUs (NVML, through
the activity check's GpuWatch, so the status bar, the idle check and this
share one reading) and the CPU time and memory of its own processes (the
server, its kernels and terminals and what they started: psutil, which
jupyter-resource-usage brings).  The tally goes to the hub every
`usage.report_seconds` with the session's token; the hub keeps the last one
and turns it into the summary of the ended session (spawner/usage.py).
JupyterLab asks for the summary so far near the session's end.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable

import psutil

from ...contract import USAGE_PATH
from ...usage import IDLE_CPU_SHARE, Allocation, GpuTally, UsageTally, summarise
from ..session.activity import GpuWatch
from ..session.gpus import visible
from ..session.hubcall import ask_hub

log = logging.getLogger("ServerApp")


def process_use(root: psutil.Process) -> tuple[float, int]:
    """(CPU seconds, resident MiB) of `root` and every process below it; the CPU of children it already
    reaped is in its own children_* times."""
    cpu, rss = 0.0, 0
    for process in [root, *root.children(recursive=True)]:
        try:
            with process.oneshot():
                times = process.cpu_times()
                cpu += times.user + times.system
                if process is root:
                    cpu += times.children_user + times.children_system
                rss += process.memory_info().rss
        except psutil.Error:  # ended between the listing and the reading
            continue
    return cpu, rss // (1024 * 1024)


def job_allocation(environ) -> Allocation:
    """What Slurm gave the job, from its environment (cores and memory of this node; the visible GPUs)."""
    devices = visible(environ.get("CUDA_VISIBLE_DEVICES"))
    return Allocation(
        gpus=len(devices or []),
        cpus=int(environ.get("SLURM_CPUS_ON_NODE") or os.cpu_count() or 1),
        memory_mib=int(environ.get("SLURM_MEM_PER_NODE") or psutil.virtual_memory().total // (1024 * 1024)),
    )


class UsageSampler:
    def __init__(
        self,
        gpus: GpuWatch,
        read_processes: Callable[[], tuple[float, int]],
        given: Allocation,
        report: Callable[[dict], Awaitable[None]],
    ):
        self.gpus = gpus
        self.read_processes = read_processes
        self.given = given
        self.report = report
        self.tally = UsageTally()
        self._last: tuple[float, float] | None = None  # (monotonic time, CPU seconds) of the last sample
        self._first_cpu: float | None = None  # CPU seconds at the first sample

    def sample(self, now: float | None = None) -> None:
        """One reading of the GPUs and the processes into the tally (blocking: NVML and /proc)."""
        now = time.monotonic() if now is None else now
        self.gpus.read()
        by_index = {g.index: g for g in self.tally.gpus}
        for reading in self.gpus.readings:
            gpu = by_index.get(reading.index)
            if gpu is None:
                gpu = by_index[reading.index] = GpuTally(index=reading.index)
                self.tally.gpus.append(gpu)
            gpu.add(reading.utilization, reading.memory_used_mib, reading.memory_total_mib, reading.energy_mj)
        cpu, rss_mib = self.read_processes()
        if self._first_cpu is None:
            self._first_cpu = cpu  # the server's start-up came before the tally's time: its CPU does not count
        self.tally.cpu_seconds = max(self.tally.cpu_seconds, cpu - self._first_cpu)
        self.tally.memory_peak_mib = max(self.tally.memory_peak_mib, rss_mib)
        if self._last is not None:
            seconds = max(now - self._last[0], 1e-6)
            gpu_busy = any(r.utilization > 0 for r in self.gpus.readings)
            self.tally.samples += 1
            self.tally.idle_samples += not gpu_busy and cpu - self._last[1] < IDLE_CPU_SHARE * seconds
            self.tally.seconds += seconds
        self._last = (now, cpu)

    def summary(self) -> dict:
        return summarise(self.tally, None, self.given)

    async def run(self, sample_seconds: float, report_seconds: float) -> None:
        loop = asyncio.get_running_loop()
        reported = loop.time()
        while True:
            try:
                await loop.run_in_executor(None, self.sample)
                if loop.time() - reported >= report_seconds:
                    reported = loop.time()
                    await self.report(self.tally.to_dict())
            except Exception as e:  # noqa: BLE001 - a failed reading or report must not stop the next
                log.warning("dsportal: usage sample or report failed: %s", e)
            await asyncio.sleep(sample_seconds)


async def report_to_hub(tally: dict) -> None:
    await ask_hub("POST", USAGE_PATH, json.dumps(tally), timeout=20)

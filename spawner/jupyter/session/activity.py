"""What counts as use of a session, as the session reports it to the hub (the user's Jupyter server, as the user).

JupyterHub's single-user server reports `web_app.last_activity()` to the hub
every JUPYTERHUB_ACTIVITY_INTERVAL seconds (the spawner sets it from
sessions.activity_seconds), and the hub's idle cullers read that
(spawner/hub/session/idle.py).  Jupyter Server counts every API request as use, and
an open JupyterLab tab polls the server every few seconds: a forgotten tab
would hold its GPUs forever.  Here use is:

- kernel traffic (Jupyter Server's own kernel activity), and any kernel busy now;
- terminal traffic (Jupyter Server's terminal activity);
- the user's mouse, keys or scrolling in JupyterLab (the extension reports them);
- work on the job's GPUs (utilisation or a process holding memory, through NVML);

and not the tab's background polling (`api_last_activity`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .gpus import GpuReading, NoGpuReadings, read_gpus, this_jobs_process
from .upstream_jupyter_server import last_activity_without

IGNORED = ("api_last_activity",)  # the open tab's polling is no use
SETTING = "dsportal_last_activity"
GPU_READING_SECONDS = 5.0  # a reading is reused this long (the status bar and the check share it)


def utcnow() -> datetime:
    return datetime.now(UTC)


def last_use(settings: dict) -> datetime:
    """Jupyter Server's last_activity() without the polling of open tabs (pure)."""
    return last_activity_without(settings, IGNORED)


def busy_kernels(kernel_manager) -> int:
    return sum(
        1
        for kid in kernel_manager.list_kernel_ids()
        if getattr(kernel_manager.get_kernel(kid), "execution_state", "") == "busy"
    )


@dataclass
class GpuWatch:
    """The job's GPU readings, read at most every GPU_READING_SECONDS (NVML through `nvml`, a seam)."""

    nvml: object
    devices: list[str] | None
    readings: list[GpuReading] = field(default_factory=list)
    note: str = ""
    read_at: float = -1e9
    shared: bool = False  # the job holds shards of its GPU (Slurm's gres/shard): its own processes say its use

    def read(self) -> None:
        if self.nvml is None or time.monotonic() - self.read_at < GPU_READING_SECONDS:
            return  # no NVML here: `note` says why
        self.read_at = time.monotonic()
        try:
            own = this_jobs_process() if self.shared else None
            self.readings, self.note = read_gpus(self.nvml, self.devices, own), ""
        except NoGpuReadings as e:
            self.readings, self.note = [], str(e)

    def in_use(self) -> bool:
        return any(r.in_use for r in self.readings)

    def to_dict(self) -> dict:
        return {"gpus": [r.to_dict() for r in self.readings], "note": self.note}


class SessionActivity:
    """Keeps `dsportal_last_activity` in the server's settings and answers what the session counts as use."""

    def __init__(self, settings: dict, gpus: GpuWatch, check_seconds: float, idle: dict):
        self.settings = settings
        self.gpus = gpus
        self.check_seconds = check_seconds
        self.idle = idle  # IdleSpec's fields {"timeout": s (0 = never), "warning": s}: what JupyterLab warns with
        settings[SETTING] = utcnow()

    def mark(self) -> None:
        self.settings[SETTING] = utcnow()

    def last_activity(self) -> datetime:
        return last_use(self.settings)

    async def check(self) -> None:
        """A busy kernel or GPU is use now (they may run for hours without a message)."""
        await asyncio.get_running_loop().run_in_executor(None, self.gpus.read)
        if busy_kernels(self.settings["kernel_manager"]) or self.gpus.in_use():
            self.mark()

    async def run(self) -> None:
        while True:
            try:
                await self.check()
            except Exception:  # noqa: BLE001 - a failed check must not stop the next
                pass
            await asyncio.sleep(self.check_seconds)

    def answer(self) -> dict:
        """What JupyterLab's idle warning reads."""
        idle = max(0, int((utcnow() - self.last_activity()).total_seconds()))
        return {"idle_seconds": idle, "idle_timeout": self.idle["timeout"], "idle_warning": self.idle["warning"]}

"""The session's clock, in the user's Jupyter server (the Slurm job, on the compute node, as the user).

The time left comes from the job's end time as Slurm holds it (`squeue
--format=%e`, asked again at most once a minute and after an extension), so
JupyterLab's countdown follows Slurm, not a browser timer.  Slurm's advance
warning (`sbatch --signal=B:USR2@N`, see spawner/hub/request/jobspec.py) marks the
session as ending: from then on JupyterLab saves every open document with
unsaved changes, and reports what it saved here, for the session log.

A session shorter than the warning window gets the warning at once, while
JupyterLab is still importing, and USR2's default action ends a process
(seen: exit 140).  So the job script ignores it, dsportal-singleuser notes
it from its first line on (`hold_warning`), the port keeper passes a noted
one on to the server, and the server takes a noted one as arrived once its
own handler is in place (`held_warning`, spawner/jupyter/clock/handlers.py).
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime

from ...contract import WARNING_SIGNAL_NAME
from ...sessionspec import ClockSpec
from ...slurmvocab import end_time_argv, parse_end

REREAD_SECONDS = 60.0  # a known end time is asked again after this long (it moves only when extended)
FRESH_SECONDS = 5.0  # "ask now" (after an extension) is still answered from an answer this recent
SQUEUE_TIMEOUT = 10.0
MAX_REPORTED = 200  # paths in one "saved" report
WARNING_SIGNAL = getattr(signal, "SIG" + WARNING_SIGNAL_NAME)  # not USR1: Jupyter Server's "print server info"


_HELD: list[float] = []  # when Slurm's warning arrived before the server had its own handler (time.monotonic())


def _note_warning(signum, frame) -> None:
    _HELD.append(time.monotonic())


def hold_warning() -> None:
    """Until the server's own handler is installed, Slurm's warning is noted instead of ending the process."""
    signal.signal(WARNING_SIGNAL, _note_warning)


def held_warning() -> float | None:
    """When a warning noted by `hold_warning` arrived (None: none did)."""
    return _HELD[0] if _HELD else None


def saved_paths(body: object) -> tuple[list[str], list[str]]:
    """A "saved" report {"saved": [paths], "failed": [paths]} -> both lists, or ValueError.

    The paths go into the session log: one line each, no control characters.
    """
    if not isinstance(body, dict) or not set(body) <= {"saved", "failed"}:
        raise ValueError('Send {"saved": ["path", ...], "failed": ["path", ...]}')
    lists = []
    for name in ("saved", "failed"):
        paths = body.get(name, [])
        if (
            not isinstance(paths, list)
            or len(paths) > MAX_REPORTED
            or not all(
                isinstance(p, str) and 0 < len(p) <= 1024 and not re.search(r"[\x00-\x1f\x7f]", p) for p in paths
            )
        ):
            raise ValueError(f'"{name}" must be a list of at most {MAX_REPORTED} paths, each on one line')
        lists.append(paths)
    return lists[0], lists[1]


@dataclass
class SessionClock:
    """What the server knows of its job's end; `now` and `run` are seams for tests."""

    job_id: str
    squeue: str = ClockSpec.squeue
    warn_minutes: list[int] = field(default_factory=lambda: list(ClockSpec.warn_minutes))
    save_minutes: int = ClockSpec.save_minutes
    extend_hours: float = ClockSpec.extend_hours  # 0: extending is not allowed
    end: datetime | None = None
    warned_at: float | None = None  # Slurm's advance warning arrived (time.monotonic())
    asked_at: float = -1e9
    now: object = datetime.now
    _asking: asyncio.Future | None = None

    async def run(self, argv: list[str]) -> str:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), SQUEUE_TIMEOUT)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise OSError(f"squeue did not answer within {SQUEUE_TIMEOUT:g} s") from None
        if proc.returncode:
            raise OSError(err.decode(errors="replace").strip() or f"squeue exit {proc.returncode}")
        return out.decode(errors="replace")

    async def end_time(self, fresh: bool = False) -> datetime | None:
        """The job's end; asked of Slurm when the answer is older than a minute (5 s if `fresh`)."""
        age = time.monotonic() - self.asked_at
        if age < (FRESH_SECONDS if fresh else REREAD_SECONDS):
            return self.end
        if self._asking is None:  # one squeue for every caller of the moment
            self._asking = asyncio.ensure_future(self._ask())
        try:
            await asyncio.shield(self._asking)
        finally:
            self._asking = None
        return self.end

    async def _ask(self) -> None:
        try:
            end = parse_end(await self.run(end_time_argv(self.squeue, self.job_id)))
        except OSError:
            return  # keep the last answer; asked again at the next request
        self.asked_at = time.monotonic()
        if end is not None:
            self.end = end

    def warning_arrived(self) -> None:
        self.warned_at = time.monotonic()

    async def answer(self, fresh: bool = False) -> dict:
        """What JupyterLab's status bar reads (GET {base}dsportal/session/clock)."""
        end = await self.end_time(fresh)
        left = None if end is None else max(0, int((end - self.now()).total_seconds()))
        ending = self.warned_at is not None or (left is not None and left <= self.save_minutes * 60)
        return {
            "job_id": self.job_id,
            "end": end.isoformat() if end else None,
            "seconds_left": left,
            "warn_minutes": sorted(self.warn_minutes, reverse=True),
            "save_minutes": self.save_minutes,
            "save_now": ending,
            "extend_hours": self.extend_hours or None,
        }

"""Every Slurm command the portal runs, in one place.

Commands are argument lists run with `create_subprocess_exec` (never a shell),
each with a timeout; a failure raises `SlurmError` carrying the command's
stderr, and `SlurmUnavailable` when the controller is down, slow or hung.

Job states come from one shared `squeue` listing of the portal's jobs
(spawner/hub/watcher.py): a job is gone only when Slurm says so (a final
state, or absent from a listing that succeeded), never because a command
failed or printed something unreadable.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import time
from dataclasses import dataclass
from portal.settings import SlurmSettings

from .jobspec import as_user
from .metrics import SLURM_FAILURES, SLURM_SECONDS
from .watcher import JobWatcher

log = logging.getLogger("JupyterHub").getChild("slurm")  # in the hub's log, its format

# stderr fragments that mean "the controller did not answer", not "bad request"
_UNAVAILABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Connection timed out",
    "Transport endpoint is not connected",
    "Zero Bytes were transmitted or received",
    "backup controller in standby",
)
_INVALID_JOB = "Invalid job id specified"

PENDING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING = frozenset({"RUNNING", "SUSPENDED", "STOPPED", "SIGNALING", "RESIZING"})
ENDING = frozenset({"COMPLETING", "STAGE_OUT"})
# The reason goes last: it is the one free-text field (Slurm's state description),
# so a "|" inside it cannot shift the other fields.  No job name is printed:
# the listing asks Slurm for the portal's jobs by name instead.
SQUEUE_FORMAT = "%i|%u|%T|%N|%S|%e|%r"


class SlurmError(RuntimeError):
    """A Slurm command failed; `stderr` holds what it printed."""

    def __init__(self, argv: list[str], returncode: int | None, stderr: str, message: str | None = None):
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr.strip()
        command = os.path.basename(argv[0]) if argv else "command"
        super().__init__(message or f"{command} failed (exit {returncode}): {self.stderr or 'no error output'}")


class SlurmUnavailable(SlurmError):
    """The Slurm controller is unreachable or did not answer in time."""


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str
    reason: str = ""
    node: str = ""
    user: str = ""
    start: str = ""  # Slurm's expected start of a pending job ('2026-11-22T11:00:00'), "" when it has none
    end: str = ""  # when a running job reaches its time limit (Slurm's end time); "" otherwise

    @property
    def pending(self) -> bool:
        return self.state in PENDING

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    @property
    def in_queue(self) -> bool:
        """Still known to Slurm as not finished (pending, running or ending)."""
        return self.state in PENDING | RUNNING | ENDING


async def run(argv: list[str], *, timeout: float, input: str | None = None,
              env: dict[str, str] | None = None) -> str:
    """Run `argv`; return stdout, or raise SlurmError / SlurmUnavailable."""
    return (await run_both(argv, timeout=timeout, input=input, env=env))[0]


def command_name(argv: list[str]) -> str:
    """The Slurm command an argument list runs ('sbatch' for sudo -n ... -u alice -- /usr/bin/sbatch ...)."""
    rest = argv[argv.index("--") + 1:] if argv and os.path.basename(argv[0]) == "sudo" and "--" in argv else argv
    return os.path.basename(rest[0]) if rest else "?"


async def run_both(argv: list[str], *, timeout: float, input: str | None = None,
                   env: dict[str, str] | None = None) -> tuple[str, str]:
    """run(), returning (stdout, stderr): some answers come on stderr (sbatch --test-only)."""
    command = command_name(argv)
    started = time.monotonic()
    try:
        return await _run_both(argv, timeout=timeout, input=input, env=env)
    except SlurmUnavailable:
        SLURM_FAILURES.labels(command, "unavailable").inc()
        raise
    except SlurmError:
        SLURM_FAILURES.labels(command, "refused").inc()
        raise
    finally:
        SLURM_SECONDS.labels(command).observe(time.monotonic() - started)


_COMMAND_VARIABLES = ("PATH", "LANG", "LC_ALL", "TZ")


def command_environment(environ: dict[str, str]) -> dict[str, str]:
    """What a command the hub runs inherits from it: the path, the locale and Slurm's own settings.

    Never the rest: the hub's environment holds its secrets (JUPYTERHUB_CRYPT_KEY,
    the proxy's token), and sudo's targets run as the user, who reads their
    /proc/PID/environ.  A submission passes its job's variables explicitly.
    """
    return {k: v for k, v in environ.items() if k in _COMMAND_VARIABLES or k.startswith("SLURM_")}


async def _run_both(argv: list[str], *, timeout: float, input: str | None, env: dict[str, str] | None
                    ) -> tuple[str, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env if env is not None else command_environment(dict(os.environ)),
            start_new_session=True,  # so a hung command is killed with all its children
        )
    except OSError as e:
        raise SlurmError(argv, None, str(e), f"cannot run {argv[0]}: {e.strerror}") from e
    try:
        out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError) as e:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            # bounded: a cancelled caller (a stopping hub, a closing event loop) must never hang on the reaping
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            log.warning("%s killed after %s; its exit was not seen within 5 s", argv[0], type(e).__name__)
        if isinstance(e, asyncio.CancelledError):
            raise
        name = os.path.basename(argv[0])
        raise SlurmUnavailable(argv, None, "", f"{name} did not answer within {timeout:g} s") from None
    stderr = err.decode(errors="replace")
    if proc.returncode != 0:
        cls = SlurmUnavailable if any(p in stderr for p in _UNAVAILABLE) else SlurmError
        raise cls(argv, proc.returncode, stderr)
    return out.decode(errors="replace"), stderr


def parse_job_id(output: str) -> str:
    """`sbatch --parsable` prints 'ID' or 'ID;cluster' (last line; warnings may precede)."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    job_id = lines[-1].split(";")[0].strip() if lines else ""
    if not job_id.isdigit():
        raise ValueError(f"sbatch printed no job id: {output.strip()[:200]!r}")
    return job_id


_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")


_SKIPPED: set[str] = set()


def _skipped_once(job_id: str, user: str) -> None:
    """Log a line that is no job of the portal's once, not at every listing."""
    if job_id not in _SKIPPED and len(_SKIPPED) < 10_000:
        _SKIPPED.add(job_id)
        log.info("Skipping %r of %s in Slurm's listing: named like the portal's jobs, but not one of them",
                 job_id, user)


class UnreadableAnswer(ValueError):
    """squeue printed something that is not the asked-for format: nothing is concluded from it."""


def parse_squeue(output: str) -> dict[str, JobInfo]:
    """Lines of SQUEUE_FORMAT ('%i|%u|%T|%N|%S|%e|%r') -> {job_id: JobInfo}.

    A line of a plain job id that does not read raises UnreadableAnswer: a job
    missing from the result means "Slurm says it is gone", so none of the
    portal's jobs may go missing by accident.  No other account can make such
    a line unreadable (every field before the reason is Slurm's own).  Any
    other line is skipped and logged once, whoever submitted its job under the
    portal's name: array elements (123_4), heterogeneous job components (82+1),
    anything else.
    """
    jobs = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.strip().split("|", 6)
        if not parts[0].isdigit():  # not a job of the portal's (a hetjob, an array, a line of anything else)
            _skipped_once(parts[0][:40], parts[1][:40] if len(parts) > 1 else "?")
            continue
        if len(parts) != 7 or not parts[2]:  # maybe one of the portal's: nothing may be concluded
            raise UnreadableAnswer(f"unreadable squeue line: {line[:200]!r}")
        job_id, user, state, node, start, end, reason = parts
        reason = "" if reason in ("None", "(null)") else reason
        node = "" if node in ("", "(null)", "n/a") else node
        state = state.split()[0]
        start = start if _TIMESTAMP.fullmatch(start) and state == "PENDING" else ""  # N/A, Unknown
        end = end if _TIMESTAMP.fullmatch(end) and state != "PENDING" else ""
        jobs[job_id] = JobInfo(job_id, state, reason, node, user, start, end)
    return jobs


def squeue_argv(slurm: SlurmSettings) -> list[str]:
    """Every job of the portal's name, in any state Slurm still remembers."""
    return [slurm.squeue, "--noheader", "--states=all", f"--name={slurm.job_name}", f"--format={SQUEUE_FORMAT}"]


def scancel_argv(slurm: SlurmSettings, username: str, job_id: str) -> list[str]:
    return as_user(slurm, username) + [slurm.scancel, job_id]


def extend_argv(slurm: SlurmSettings, job_id: str, minutes: int) -> list[str]:
    """The root-owned helper (spawner/root/extend.py) through sudo: the only command the hub runs as root."""
    return [slurm.sudo, "-n", "--", slurm.extend_command, job_id, str(minutes)]


def tail_argv(slurm: SlurmSettings, username: str, path: str, lines: int) -> list[str]:
    # Read as the user: a root read of a file in a user's home would follow
    # whatever symlink the user put there.
    return as_user(slurm, username) + ["tail", "-n", str(lines), "--", path]


class SlurmClient:
    """Submit, query and cancel session jobs with the admin's Slurm settings."""

    def __init__(self, slurm: SlurmSettings):
        self.slurm = slurm
        self.watcher = JobWatcher(self._squeue)
        self.submitting: dict[str, int] = {}  # username -> sbatch calls in flight

    async def submit(self, argv: list[str], script: str, env: dict[str, str]) -> str:
        out = await run(argv, input=script, env=env, timeout=self.slurm.command_timeout)
        try:
            return parse_job_id(out)
        except ValueError as e:
            raise SlurmError(argv, 0, out, str(e)) from e

    async def _squeue(self) -> dict[str, JobInfo]:
        argv = squeue_argv(self.slurm)
        out = await run(argv, timeout=self.slurm.command_timeout)
        try:
            return parse_squeue(out)
        except UnreadableAnswer as e:
            raise SlurmError(argv, 0, out[-500:], str(e)) from None

    async def status(self, job_id: str, max_age: float = 0.0) -> JobInfo | None:
        """The job as Slurm lists it; None means Slurm says it is gone (absent from a successful listing)."""
        return await self.watcher.status(job_id, max_age)

    async def submit_as(self, username: str, argv: list[str], script: str, env: dict[str, str]) -> str:
        """submit(), marking `username` as having an sbatch in flight meanwhile (see busy_users)."""
        self.submitting[username] = self.submitting.get(username, 0) + 1
        try:
            return await self.submit(argv, script, env)
        finally:
            self.submitting[username] -= 1
            if not self.submitting[username]:
                del self.submitting[username]

    async def cancel(self, username: str, job_id: str) -> None:
        argv = scancel_argv(self.slurm, username, job_id)
        try:
            await run(argv, timeout=self.slurm.command_timeout)
        except SlurmError as e:
            if _INVALID_JOB not in e.stderr:
                raise
            log.info("scancel %s: Slurm no longer knows the job", job_id)

    async def extend(self, job_id: str, minutes: int) -> None:
        """Raise the job's time limit to `minutes`; SlurmError carries the helper's words on refusal."""
        await run(extend_argv(self.slurm, job_id, minutes), timeout=self.slurm.command_timeout * 3)

    async def output_tail(self, username: str, path: str, lines: int = 20) -> str:
        try:
            return await run(tail_argv(self.slurm, username, path, lines), timeout=self.slurm.command_timeout)
        except SlurmError as e:
            return f"(could not read {path}: {e.stderr or e})"

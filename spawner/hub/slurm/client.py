"""The hub's one Slurm client: every Slurm command the hub runs goes through `run` here.

Commands are argument lists run with `create_subprocess_exec` (never a shell),
each with a timeout, timed and counted in the hub's metrics; a failure raises
`SlurmError` carrying the command's stderr, and `SlurmUnavailable` when the
controller is down, slow or hung.  What the commands say and how their
answers read is Slurm's vocabulary (spawner/slurmvocab.py); what needs the
admin's settings or sudo (running as the user) is built here.

Job states come from one shared `squeue` listing of every job, found by id
(spawner/hub/slurm/watcher.py): a job is gone only when Slurm says so (a final
state, or absent from a listing that succeeded), never because a command
failed or printed something unreadable, nor because its owner renamed it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import TypeVar

from portal.settings import SlurmSettings

from ...slurmaccounting import UsedJob, parse_usage, usage_argv
from ...slurmassociations import (
    associations_argv,
    default_accounts_argv,
    parse_associations,
    parse_pairs,
    parse_qos_limits,
    qos_argv,
)
from ...slurmshares import parse_shares, shares_argv
from ...slurmvocab import (
    INVALID_JOB,
    UNAVAILABLE,
    AccountedJob,
    JobInfo,
    ListedJob,
    NodeState,
    UnreadableAnswer,
    accounting_argv,
    all_jobs_argv,
    estimate_argv,
    jobs_argv,
    named_jobs_argv,
    parse_accounting,
    parse_all_jobs,
    parse_job_id,
    parse_job_ids,
    parse_queue_order,
    parse_sinfo,
    parse_squeue,
    parse_test_only,
    queue_order_argv,
    sinfo_nodes_argv,
)
from ..base.metrics import SLURM_FAILURES, SLURM_SECONDS
from ..request.jobrequest import as_user
from .associations import Accounts, accounts_of
from .held import HeldJob, held_jobs_argv, parse_held_jobs
from .visibility import JobVisibility
from .watcher import JobWatcher

log = logging.getLogger("JupyterHub").getChild("slurm")  # in the hub's log, its format

Answer = TypeVar("Answer")


class SlurmError(RuntimeError):
    """A Slurm command failed; `stderr` holds what it printed."""

    def __init__(self, argv: list[str], returncode: int | None, stderr: str, message: str | None = None):
        self.stdout = ""
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr.strip()
        command = os.path.basename(argv[0]) if argv else "command"
        super().__init__(message or f"{command} failed (exit {returncode}): {self.stderr or 'no error output'}")


class SlurmUnavailable(SlurmError):
    """The Slurm controller is unreachable or did not answer in time."""


class JobsHidden(SlurmError):
    """A job is missing from the hub's listing while Slurm hides other users' jobs from the hub (PrivateData=jobs):
    its state is unknown, not "gone" (spawner/hub/slurm/visibility.py)."""


class CommandStarts:
    """The commands being started, and whether any may start (shut at the hub's stop: spawner/hub/wiring/shutdown.py).

    CPython 3.11 never finishes a subprocess start whose pipe-connecting task was cancelled: it waits for an exit
    that is never reported.  JupyterHub's stop cancels every task at once and waits for all of them, so a command
    starting at that moment kept the hub serving, and submitting, until it was killed.  Once shut, a command
    waits to be cancelled with the rest instead of starting.
    """

    def __init__(self) -> None:
        self.starting = 0
        self.shut = False
        self._none_left: asyncio.Event | None = None

    async def enter(self) -> None:
        if self.shut:
            await asyncio.get_running_loop().create_future()  # never set: the hub's stop cancels this wait
        self.starting += 1

    def leave(self) -> None:
        self.starting -= 1
        if not self.starting and self._none_left is not None:
            self._none_left.set()

    async def shut_down(self, timeout: float) -> bool:
        """No command starts from now on; wait until none is starting (at most `timeout` s).  Whether none is."""
        self.shut = True
        if self.starting:
            self._none_left = asyncio.Event()
            try:
                async with asyncio.timeout(timeout):
                    await self._none_left.wait()
            except TimeoutError:
                return False
        return True


STARTS = CommandStarts()  # the hub process's


async def run(argv: list[str], *, timeout: float, input: str | None = None, env: dict[str, str] | None = None) -> str:
    """Run `argv`; return stdout, or raise SlurmError / SlurmUnavailable."""
    return (await run_both(argv, timeout=timeout, input=input, env=env))[0]


def command_name(argv: list[str]) -> str:
    """The Slurm command an argument list runs ('sbatch' for sudo -n ... -u alice -- /usr/bin/sbatch ...)."""
    rest = argv[argv.index("--") + 1 :] if argv and os.path.basename(argv[0]) == "sudo" and "--" in argv else argv
    return os.path.basename(rest[0]) if rest else "?"


async def run_both(
    argv: list[str], *, timeout: float, input: str | None = None, env: dict[str, str] | None = None
) -> tuple[str, str]:
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
    kept = {k: v for k, v in environ.items() if k in _COMMAND_VARIABLES or k.startswith("SLURM_")}
    # squeue and sacct cut an array's waiting tasks ("123_[5-999%4]") at 64 characters unless told otherwise: a
    # cut line reads as no line, and its tasks as never listed (spawner/hub/runs/sweepboard.py)
    return {**kept, "SLURM_BITSTR_LEN": "0"}


async def _run_both(
    argv: list[str], *, timeout: float, input: str | None, env: dict[str, str] | None
) -> tuple[str, str]:
    await STARTS.enter()
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
    finally:
        STARTS.leave()
    try:
        # not wait_for: CPython 3.11's returns the answer of a command that ended as its caller was cancelled, and
        # the caller went on (a start stopped in its first second went on starting, the stop answered 500)
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate(input.encode() if input is not None else None)
    except (TimeoutError, asyncio.CancelledError) as e:
        await stop_command(proc, argv[0], type(e).__name__)
        if isinstance(e, asyncio.CancelledError):
            raise
        name = os.path.basename(argv[0])
        raise SlurmUnavailable(argv, None, "", f"{name} did not answer within {timeout:g} s") from None
    stderr = err.decode(errors="replace")
    if proc.returncode != 0:
        cls = SlurmUnavailable if any(p in stderr for p in UNAVAILABLE) else SlurmError
        failed = cls(argv, proc.returncode, stderr)
        failed.stdout = out.decode(errors="replace")  # what it said before failing (head of several files)
        raise failed
    return out.decode(errors="replace"), stderr


async def stop_command(proc: asyncio.subprocess.Process, name: str, why: str) -> None:
    """End a command started with start_new_session and everything it started; bounded, even when cancelled.

    SIGTERM first: sudo passes it on to the command it runs as the user, which the hub itself may not
    signal (a `head` blocked on a FIFO a user planted); SIGKILL for whatever is left after a moment."""
    for signum, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            break
        try:
            # bounded: a cancelled caller (a stopping hub, a closing event loop) must never hang on the reaping
            await asyncio.wait_for(asyncio.shield(proc.wait()), grace)
            break
        except TimeoutError:
            if signum == signal.SIGKILL:
                log.warning("%s killed after %s; its exit was not seen within 5 s", name, why)


def scancel_argv(slurm: SlurmSettings, username: str, job_id: str) -> list[str]:
    return as_user(slurm, username) + [slurm.scancel, job_id]


def extend_argv(slurm: SlurmSettings, job_id: str, minutes: int) -> list[str]:
    """The root-owned helper (spawner/root/extend.py) through sudo: the only command the hub runs as root."""
    return [slurm.sudo, "-n", "--", slurm.extend_command, job_id, str(minutes)]


def head_argv(slurm: SlurmSettings, username: str, path: str, max_bytes: int) -> list[str]:
    """Read a file of the user's as the user (a notebook to submit): at most `max_bytes` bytes."""
    return as_user(slurm, username) + ["head", "-c", str(max_bytes), "--", path]


def heads_argv(slurm: SlurmSettings, username: str, paths: list[str], max_bytes: int) -> list[str]:
    """Read the start of several of the user's files in one command, as the user; each after a line
    `==> PATH <==` (-v: even for one file)."""
    return as_user(slurm, username) + ["head", "-v", "-c", str(max_bytes), "--", *paths]


def split_heads(text: str, paths: list[str]) -> dict[str, str]:
    """head -v's answer -> {path: its text} for the paths it printed (pure); a line that looks like a header
    but names none of `paths` is text."""
    headers = {f"==> {path} <==": path for path in paths}
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line in headers:
            current = found.setdefault(headers[line], [])
        elif current is not None:
            current.append(line)
    return {path: "\n".join(lines).strip("\n") for path, lines in found.items()}


HEADS_AT_ONCE = 1000  # files per head command: its argument list stays far below ARG_MAX


TAIL_BYTES = 256 * 1024  # the most of a log the hub reads at once: the lines are cut from these bytes


def tail_argv(slurm: SlurmSettings, username: str, path: str, max_bytes: int = TAIL_BYTES) -> list[str]:
    # Read as the user: a root read of a file in a user's home would follow
    # whatever symlink the user put there.  Bytes, not lines: a log of one
    # endless line (or a link to a huge sparse file) must not fill the hub's memory.
    return as_user(slurm, username) + ["tail", "-c", str(max_bytes), "--", path]


def last_lines(text: str, lines: int) -> str:
    """The last `lines` lines of a tail's bytes (pure)."""
    kept = text.splitlines(keepends=True)[-lines:]
    return "".join(kept)


class SlurmClient:
    """Every Slurm command of the hub, with the admin's Slurm settings.

    The sessions' jobs (submit, list, cancel, extend), what is free (sinfo), a
    partition's queue and start estimates (sbatch --test-only).
    """

    def __init__(self, slurm: SlurmSettings):
        self.slurm = slurm
        self.watcher = JobWatcher(self._squeue)
        self.visibility = JobVisibility(self._read, slurm.sacctmgr)
        self.submitting: dict[str, int] = {}  # username -> sbatch calls in flight

    async def submit(self, argv: list[str], script: str, env: dict[str, str]) -> str:
        out = await run(argv, input=script, env=env, timeout=self.slurm.command_timeout)
        try:
            return parse_job_id(out)
        except ValueError as e:
            raise SlurmError(argv, 0, out, str(e)) from e

    async def _read(self, argv: list[str], parse: Callable[[str], Answer]) -> Answer:
        """Run a query; an answer that does not read is a SlurmError (its end in `stderr`), never a guess."""
        out = await run(argv, timeout=self.slurm.command_timeout)
        try:
            return parse(out)
        except UnreadableAnswer as e:
            raise SlurmError(argv, 0, out[-500:], str(e)) from None

    async def _squeue(self) -> dict[str, JobInfo]:
        return await self._read(jobs_argv(self.slurm.squeue), parse_squeue)

    async def held_jobs(self, user: str) -> dict[str, HeldJob]:
        """The user's jobs of the portal's name that Slurm holds or queues now, by id (the limits' count)."""
        return await self._read(held_jobs_argv(self.slurm.squeue, self.slurm.job_name, user), parse_held_jobs)

    async def named_jobs(self) -> set[str]:
        """The ids of the jobs of the portal's name, whoever submitted them (the reconciler's candidates)."""
        return await self._read(named_jobs_argv(self.slurm.squeue, self.slurm.job_name), parse_job_ids)

    async def nodes(self) -> list[NodeState]:
        """Every node of every partition, as sinfo lists it (spawner/hub/slurm/clusterinfo.py shares the answer)."""
        return await self._read(sinfo_nodes_argv(self.slurm.sinfo), parse_sinfo)

    async def accounts(self) -> Accounts:
        """Every user's Slurm accounts, their default first, and the QOS each allows (spawner/hub/slurm/associations.py)."""
        associations = await self._read(associations_argv(self.slurm.sacctmgr), parse_associations)
        defaults = await self._read(default_accounts_argv(self.slurm.sacctmgr), parse_pairs)
        limits = await self._read(qos_argv(self.slurm.sacctmgr), parse_qos_limits)
        try:  # the allocations only inform: without them the accounts and QOS still arrive
            shares = await self._read(shares_argv(self.slurm.sshare), parse_shares)
        except SlurmError as e:
            log.warning("sshare did not answer; the accounts are shown without their allocations: %s", e)
            shares = None
        return accounts_of(associations, defaults, limits, shares)

    async def all_jobs(self) -> list[ListedJob]:
        """Every user's jobs Slurm still lists (spawner/hub/slurm/joblisting.py shares the answer)."""
        return await self._read(all_jobs_argv(self.slurm.squeue), parse_all_jobs)

    async def accounting(self, days: int) -> list[AccountedJob]:
        """Every user's jobs of the last `days` days from Slurm's accounting (slurmdbd)."""
        return await self._read(accounting_argv(self.slurm.sacct, days), parse_accounting)

    async def usage(self, days: int) -> list[UsedJob]:
        """Every user's jobs of the last `days` days with their CPU time and peak memory (slurmdbd); read in a
        thread: a busy cluster's month is a few hundred thousand lines, seconds of the event loop otherwise."""
        out = await run(usage_argv(self.slurm.sacct, days), timeout=self.slurm.command_timeout)
        per_gpu = self.slurm.shards.per_gpu
        return await asyncio.get_running_loop().run_in_executor(None, parse_usage, out, per_gpu)

    async def queue_order(self, partition: str) -> list[str]:
        """The partition's pending jobs in Slurm's priority order."""
        return await self._read(queue_order_argv(self.slurm.squeue, partition), parse_queue_order)

    async def expected_start(self, sbatch_argv: list[str], script: str) -> str | None:
        """Slurm's expected start of a submission ('2026-11-22T11:00:00'; None if it gives none); nothing is queued."""
        _, err = await run_both(estimate_argv(sbatch_argv), input=script, timeout=self.slurm.command_timeout)
        return parse_test_only(err)

    async def status(self, job_id: str, max_age: float = 0.0) -> JobInfo | None:
        """The job as Slurm lists it; None means Slurm says it is gone (absent from a successful listing that could
        show it: JobsHidden when Slurm hides other users' jobs from the hub)."""
        info = await self.watcher.status(job_id, max_age)
        if info is None and await self.visibility.hides_jobs():
            argv = jobs_argv(self.slurm.squeue)
            raise JobsHidden(
                argv,
                0,
                "",
                f"job {job_id} is not in the hub's listing, and Slurm hides other users' "
                "jobs from the hub (PrivateData=jobs)",
            )
        return info

    async def submit_as(self, username: str, argv: list[str], script: str, env: dict[str, str]) -> str:
        """submit(), marking `username` as having an sbatch in flight meanwhile (see busy_users)."""
        self.submitting[username] = self.submitting.get(username, 0) + 1
        try:
            return await self.submit(argv, script, env)
        finally:
            self.submitting[username] -= 1
            if not self.submitting[username]:
                del self.submitting[username]

    async def cancel(self, username: str, job_id: str) -> bool:
        """scancel as the user; True when Slurm no longer knows the job (gone, whatever PrivateData hides from
        the hub: the user sees their own jobs)."""
        argv = scancel_argv(self.slurm, username, job_id)
        try:
            await run(argv, timeout=self.slurm.command_timeout)
        except SlurmError as e:
            if INVALID_JOB not in e.stderr:
                raise
            log.info("scancel %s: Slurm no longer knows the job", job_id)
            return True
        return False

    async def extend(self, job_id: str, minutes: int) -> None:
        """Raise the job's time limit to `minutes`; SlurmError carries the helper's words on refusal."""
        await run(extend_argv(self.slurm, job_id, minutes), timeout=self.slurm.command_timeout * 3)

    async def read_as(self, username: str, path: str, max_bytes: int) -> str:
        """The first `max_bytes` bytes of the user's file, read as the user (never a root read, which would
        follow any symlink the user planted); SlurmError with head's words when it cannot."""
        return await run(head_argv(self.slurm, username, path, max_bytes), timeout=self.slurm.command_timeout)

    async def read_many_as(self, username: str, paths: list[str], max_bytes: int) -> dict[str, str]:
        """The start of each file that exists, read as the user in one head per HEADS_AT_ONCE files; a file
        that is missing or unreadable is left out.  SlurmError when head did not run at all."""
        found: dict[str, str] = {}
        for first in range(0, len(paths), HEADS_AT_ONCE):
            chunk = paths[first : first + HEADS_AT_ONCE]
            argv = heads_argv(self.slurm, username, chunk, max_bytes)
            try:
                text = await run(argv, timeout=self.slurm.command_timeout)
            except SlurmUnavailable:
                raise
            except SlurmError as e:
                if e.returncode != 1:  # head's 1: some file did not open; what it read is on stdout
                    raise
                text = e.stdout
            found.update(split_heads(text, chunk))
        return found

    async def output_tail(self, username: str, path: str, lines: int = 20) -> str:
        try:
            text = await run(tail_argv(self.slurm, username, path), timeout=self.slurm.command_timeout)
        except SlurmError as e:
            return f"(could not read {path}: {e.stderr or e})"
        return last_lines(text, lines)

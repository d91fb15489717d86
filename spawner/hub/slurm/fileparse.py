"""A user's notebook read as the user and parsed outside the hub's process: bounded per user and in total.

    sudo -n -u USER head -c MAX+1 -- FILE  |  python -I -m spawner.notebookparams FILE MAX KIND

The bytes go from `head` straight into the parser's stdin through a pipe the
hub only hands over: they never enter the hub, whose memory stays where it was
(a 20 MiB notebook parsed in the hub took ~0.6 s of the interpreter's lock and
left hundreds of MiB behind), and the hub's loop and lock are never held by a
parse.  At most PARSES_AT_ONCE parses run at once for everyone, and
PARSES_PER_USER of them for one user; a user past their share is refused at
once (429), a request that finds every slot taken waits PARSE_WAIT s for one,
then is refused with words (503).  Both commands are argument lists with
one timeout, killed with their children when it passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from portal.settings import SlurmSettings

from ... import notebookparams
from ...slurmvocab import UNAVAILABLE
from .client import STARTS, SlurmError, SlurmUnavailable, command_environment, head_argv, stop_command

NICE = "/usr/bin/nice"  # coreutils', on every Linux head node
PARSES_AT_ONCE = 4  # every user together: four processes of a few hundred MiB at most, each for under a second
PARSES_PER_USER = 2  # one user's share of them (the dialog asks once; a submit reads once more)
PARSE_WAIT = 10.0  # s a read waits for a free slot before it is refused
PARSER_MODULE = "spawner.notebookparams"  # its __main__: stdin's bytes -> {"parameters": [...]} or {"refused": ...}
MAX_ANSWER = 1024 * 1024  # bytes of the parser's answer read (200 parameters of 200 characters are ~100 KiB)


class ParseRefused(Exception):
    """No parse now (the user's share or every slot is taken, or the parser failed); str(e) is what the user reads,
    `status` the HTTP status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


PORTAL_ROOT = str(Path(notebookparams.__file__).resolve().parents[2])  # where the hub's own `spawner` package lies


def parser_argv(python: str, path: str, max_bytes: int, kind: str) -> list[str]:
    """The parser process: the portal's own interpreter, without the user's site folder (-s) or the working
    folder (-P) on its path; its environment (parser_environment) names the hub's own package.  It runs at the
    lowest CPU priority (nice 19): on a busy head node the hub's own event loop, which answers every user, goes
    first, and a parse takes the CPU that is left."""
    return [NICE, "-n", "19", python, "-s", "-P", "-m", PARSER_MODULE, path, str(max_bytes), kind]


def parser_environment(environ: dict[str, str]) -> dict[str, str]:
    """The commands' environment (never the hub's secrets), with the hub's own code first on the parser's path:
    the parse is the same code as the hub's, wherever it was installed from."""
    return {**command_environment(environ), "PYTHONPATH": PORTAL_ROOT}


class FileParses:
    """The hub's parses of users' files (one per HubServices): the slots, and the pipeline."""

    def __init__(self, slurm: SlurmSettings, python: str = sys.executable):
        self.slurm = slurm
        self.python = python
        self._free = asyncio.Semaphore(PARSES_AT_ONCE)
        self._users: dict[str, int] = {}  # parses running or waiting, per user

    @contextlib.asynccontextmanager
    async def _slot(self, username: str) -> AsyncIterator[None]:
        if self._users.get(username, 0) >= PARSES_PER_USER:
            raise ParseRefused(
                f"{PARSES_PER_USER} of your files are being read already; try again when they are done.", 429
            )
        self._users[username] = self._users.get(username, 0) + 1
        try:
            try:
                async with asyncio.timeout(PARSE_WAIT):
                    await self._free.acquire()
            except TimeoutError:
                raise ParseRefused(
                    "The hub is reading many users' notebooks just now; try again in a minute.", 503
                ) from None
            try:
                yield
            finally:
                self._free.release()
        finally:
            self._users[username] -= 1
            if not self._users[username]:
                del self._users[username]

    async def read_as(self, username: str, path: str, max_bytes: int, kind: str, shown: str) -> dict:
        """The parser's answer for the user's file read as the user: {"parameters": [...]} or {"refused": words
        that name the file as `shown`}.  SlurmError with head's words when the file cannot be read; ParseRefused
        when no parse runs or it failed."""
        async with self._slot(username):
            head = head_argv(self.slurm, username, path, max_bytes + 1)
            return await self._pipeline(head, parser_argv(self.python, shown, max_bytes, kind))

    async def _pipeline(self, head: list[str], parse: list[str]) -> dict:
        procs = await _start(head, parse)
        try:
            async with asyncio.timeout(self.slurm.command_timeout):
                (_, head_err), (out, parse_err) = await asyncio.gather(procs[0].communicate(), procs[1].communicate())
        except (TimeoutError, asyncio.CancelledError) as e:
            await asyncio.gather(
                *(stop_command(p, argv[0], type(e).__name__) for p, argv in zip(procs, (head, parse), strict=True))
            )
            if isinstance(e, asyncio.CancelledError):
                raise
            raise SlurmUnavailable(
                head, None, "", f"reading the file did not end within {self.slurm.command_timeout:g} s"
            ) from None
        reader, parser = procs
        stderr = head_err.decode(errors="replace")
        if reader.returncode != 0 and parser.returncode == 0:
            cls = SlurmUnavailable if any(p in stderr for p in UNAVAILABLE) else SlurmError
            raise cls(head, reader.returncode, stderr)
        if parser.returncode != 0 or len(out) > MAX_ANSWER:
            raise ParseRefused(_failed_words(parse_err.decode(errors="replace")), 400)
        return json.loads(out)


async def _start(head: list[str], parse: list[str]) -> tuple[asyncio.subprocess.Process, asyncio.subprocess.Process]:
    """Both commands, `head`'s stdout connected to the parser's stdin (the hub keeps no end of the pipe)."""
    await STARTS.enter()
    read_end, write_end = os.pipe()
    started: list[asyncio.subprocess.Process] = []
    commands = (
        (head, asyncio.subprocess.DEVNULL, write_end, command_environment(dict(os.environ))),
        (parse, read_end, asyncio.subprocess.PIPE, parser_environment(dict(os.environ))),
    )
    try:
        for argv, stdin, stdout, env in commands:
            started.append(
                await asyncio.create_subprocess_exec(
                    *argv, stdin=stdin, stdout=stdout, stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True
                )
            )
    except OSError as e:
        for proc in started:
            await stop_command(proc, head[0], "a failed start")
        raise SlurmError(head, None, str(e), f"cannot run {e.filename or head[0]}: {e.strerror}") from e
    finally:
        os.close(read_end)
        os.close(write_end)
        STARTS.leave()
    return started[0], started[1]


def _failed_words(stderr: str) -> str:
    if "MemoryError" in stderr:
        return "The file could not be read as a notebook: it takes more memory than a notebook may; clear its outputs and save it again."
    return "The file could not be read as a notebook; open it in JupyterLab and save it again."

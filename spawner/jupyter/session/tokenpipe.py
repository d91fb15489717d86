"""The session's current token, from its Jupyter server to its port keeper (in the Slurm job, as the user).

The keeper (spawner/jupyter/session/keeper.py) reports the server's end to the hub with
the session's token.  When a share ends the hub replaces that token in the
server (spawner/jupyter/sharing/handover.py, token.py), which passes the new one on through a
pipe made before the fork: never through a file or an environment that the
session's other processes read.  Both ends are closed on exec, so no kernel or
terminal inherits them.  Standard library only: the keeper imports it.
"""

from __future__ import annotations

import os
import threading

_WRITER: list[int] = []  # in the server: the pipe's end towards the keeper


def to_keeper(fd: int) -> None:
    """In the server: where `send` writes (the pipe's write end, made before the fork)."""
    os.set_blocking(fd, False)  # a keeper that stopped reading must not stall the server
    _WRITER[:] = [fd]


def send(token: str) -> bool:
    """In the server: pass the session's new token on to the keeper; whether it went."""
    if not _WRITER:
        return False  # no keeper (a test, a plain jupyterhub-singleuser)
    try:
        return os.write(_WRITER[0], token.encode() + b"\n") > 0
    except OSError:
        return False


class Latest:
    """In the keeper: the last token the server passed on, `first` until then; the pipe is read in a thread
    (the keeper's own waits for the server), until the server's end closes it."""

    def __init__(self, fd: int, first: str):
        self.token = first
        self._lock = threading.Lock()
        threading.Thread(target=self._read, args=(fd,), name="session-token", daemon=True).start()

    def _read(self, fd: int) -> None:
        pending = b""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(4096):
                *lines, pending = (pending + chunk).split(b"\n")
                if lines and lines[-1]:
                    with self._lock:
                        self.token = lines[-1].decode()

    def __call__(self) -> str:
        with self._lock:
            return self.token

"""The session's API token in its Jupyter server (in the Slurm job, as the owner).

The job starts with the token JupyterHub made for the session
(JUPYTERHUB_API_TOKEN): the session calls the hub with it
(spawner/jupyter/session/hubcall.py, JupyterHub's activity reports), and it is
the secret of the session's OAuth logins.  A guest's code ran as the owner and
could copy it, so when a share ends the hub replaces it and hands the new one
over (spawner/jupyter/sharing/handover.py), which `become`s the session's
token from then on.  It is kept in this process's memory only: the
environment that kernels and terminals inherit keeps the start's token, now
dead.
"""

from __future__ import annotations

import hmac
import os

from . import tokenpipe

_TOKEN: list[str] = []  # the token taken from the hub; the environment's until one is


def current() -> str:
    """The session's token now."""
    return _TOKEN[0] if _TOKEN else os.environ.get("JUPYTERHUB_API_TOKEN", "")


def is_session_token(token: str) -> bool:
    """Whether `token` is the session's own token now (which a guest's code could have copied)."""
    own = current()
    return bool(token and own) and hmac.compare_digest(token.encode(), own.encode())


def become(token: str) -> None:
    """`token` is the session's token from now on, for this server and its port keeper (tokenpipe.py)."""
    _TOKEN[:] = [token]
    tokenpipe.send(token)

"""A session's name in the hub's log: "user" or "user:server", as JupyterHub's own lines name it (hub side).

JupyterHub builds that text in a private property (`Spawner._log_name`); the
portal builds the same from the spawner's public `user.name` and `name`, so
its lines and JupyterHub's name a session alike.  tests/unit/test_upstream_jupyterhub.py
fails when JupyterHub's text changes.
"""

from __future__ import annotations


def log_name(spawner) -> str:
    """The name of `spawner`'s session: "alice" for alice's unnamed session, "alice:gpu" for her session "gpu"."""
    user = spawner.user.name if spawner.user else "(no user)"  # JupyterHub's words for a spawner without one
    return f"{user}:{spawner.name}" if spawner.name else user

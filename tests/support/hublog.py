"""The dev cluster's hub log (deploy/dev/supervisor.py writes the hub's output there), read from a mark on."""

from __future__ import annotations

from pathlib import Path

HUB_LOG = Path("/var/log/dsportal-dev/jupyterhub.out")


def mark() -> int:
    """Where the log ends now: what `since` reads from."""
    return HUB_LOG.stat().st_size


def since(offset: int) -> str:
    """What the hub logged after `offset` (a `mark()`)."""
    with HUB_LOG.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")

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


NOTABLE = ("[W ", "[E ", "[C ", "Traceback", "Stopping", "has ended", "exited", "Removing", "Deleting", "Adding")


def notable(text: str, most: int = 80) -> str:
    """The lines of a stretch of the hub log that say what went wrong or what changed (warnings, errors, sessions
    stopped, ended or exited, routes removed or added), the last `most` of them (pure)."""
    lines = [line for line in text.splitlines() if any(word in line for word in NOTABLE)]
    return "\n".join(lines[-most:])

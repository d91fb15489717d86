"""How long before a session's time limit the hub continues it automatically, and which sessions it may (pure).

The continuation must be done before Slurm's warning saves the documents (`sessions.save_minutes` before the
end), with a kernel's time to write its variables (`sessions.continuation.dump_seconds`) and half a minute more.
A session whose whole time limit is under twice that lead would be continued as soon as it runs, and its
successor in turn: an endless chain of short jobs on the user's account.  Those are not continued automatically.
"""

from __future__ import annotations

from portal.settings import PortalSettings


def lead_seconds(settings: PortalSettings) -> int:
    """Seconds before the end at which a session chosen to continue automatically is continued."""
    return settings.sessions.save_minutes * 60 + settings.sessions.continuation.dump_seconds + 30


def continues_automatically(settings: PortalSettings, limit_minutes: int) -> bool:
    """Whether a session of `limit_minutes` (its time limit, extensions included) may continue automatically."""
    return settings.sessions.continuation.enabled and limit_minutes * 60 >= 2 * lead_seconds(settings)

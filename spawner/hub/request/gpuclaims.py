"""The GPUs of a user's runs and sweeps under sessions.max_gpus_per_user, as the sessions' check sees them (hub side).

One `GpuClaims` on the hub's services (spawner/hub/slurm/services.py) holds the
run and sweep submissions that passed the cap and wait for their sbatch, and
counts what a user's runs and sweeps hold for a session's start.  The counting
is the runs' (spawner/hub/runs/limits.py), which sit above the sessions: the
hub's wiring hands it over (`count_runs`), so that the sessions' check needs
no import of the runs.  Without it (a hub not wired, a unit test) a session's
check counts the claims only.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from .sessionlimits import Held

RunsCounter = Callable[[object, tuple[list, list]], list[Held]]  # (user, listing) -> what their runs hold


class GpuClaims:
    """GPUs of the run and sweep submissions that passed the cap and wait for their sbatch, by user."""

    def __init__(self) -> None:
        self._claims: dict[str, dict[int, int]] = {}
        self._ids = itertools.count()

    def of(self, username: str) -> list[Held]:
        return [Held("being submitted", gpus, kind="run") for gpus in self._claims.get(username, {}).values()]

    def claim(self, username: str, gpus: int) -> int:
        token = next(self._ids)
        self._claims.setdefault(username, {})[token] = gpus
        return token

    def release(self, username: str, token: int) -> None:
        mine = self._claims.get(username, {})
        mine.pop(token, None)
        if not mine:
            self._claims.pop(username, None)

    count_runs: RunsCounter | None = None  # the runs' own count (runs/limits.py), handed over by the wiring

    def held_in_runs(self, user, listing: tuple[list, list]) -> list[Held]:
        """What the user's runs and sweeps hold, and their submissions under way (no await: a check's one step)."""
        return self.count_runs(user, listing) if self.count_runs is not None else self.of(user.name)

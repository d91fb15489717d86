"""sshare's vocabulary: each account's GPU allocation, what is used of it, and each user's fairshare (standard library
only).

One `sshare --all` answers for every account and user (the hub shares it, spawner/hub/slurm/associations.py).  An
account's own line carries its allocation (GrpTRESMins, e.g. `gres/gpu=60000`: 1,000 GPU-hours) and what its jobs
used of it (GrpTRESRaw, in TRES-minutes, decayed as the site's PriorityDecayHalfLife says); a user's line in an
account carries the user's fairshare factor there (0 to 1: 1 = used nothing of the share yet).  sshare indents
the account tree with spaces.
"""

from __future__ import annotations

from dataclasses import dataclass

from .slurmvocab import UnreadableAnswer

GPU_TRES = "gres/gpu"
FIELDS = ("Account", "User", "FairShare", "GrpTRESMins", "GrpTRESRaw")


def shares_argv(sshare: str) -> list[str]:
    return [sshare, "--noheader", "--parsable2", "--all", f"--format={','.join(FIELDS)}"]


def tres(text: str) -> dict[str, float]:
    """'cpu=0,mem=0,gres/gpu=60000' -> {'cpu': 0.0, 'mem': 0.0, 'gres/gpu': 60000.0}; '' -> {}."""
    found = {}
    for part in filter(None, text.split(",")):
        name, sep, value = part.partition("=")
        try:
            found[name] = float(value)
        except ValueError:
            raise UnreadableAnswer(f"unreadable TRES {part!r}") from None
        if not sep:
            raise UnreadableAnswer(f"unreadable TRES {part!r}")
    return found


@dataclass(frozen=True)
class Allocation:
    """An account's GPU-minutes: its limit (None: no GPU allocation) and what its jobs used."""

    limit_minutes: float | None
    used_minutes: float

    @property
    def left_minutes(self) -> float | None:
        return None if self.limit_minutes is None else max(0.0, self.limit_minutes - self.used_minutes)


@dataclass(frozen=True)
class Shares:
    allocations: dict[str, Allocation]  # account -> its GPU allocation
    fairshare: dict[tuple[str, str], float]  # (user, account) -> the user's fairshare factor there


def parse_shares(output: str) -> Shares:
    allocations: dict[str, Allocation] = {}
    fairshare: dict[tuple[str, str], float] = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != len(FIELDS):
            raise UnreadableAnswer(f"unreadable sshare line: {line[:200]!r}")
        account, user, factor, limits, used = (p.strip() for p in parts)
        if user:
            try:
                fairshare[(user, account)] = float(factor) if factor else 0.0
            except ValueError:
                raise UnreadableAnswer(f"unreadable sshare line: {line[:200]!r}") from None
        else:
            allocations[account] = Allocation(tres(limits).get(GPU_TRES), tres(used).get(GPU_TRES, 0.0))
    return Shares(allocations, fairshare)

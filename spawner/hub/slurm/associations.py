"""Which Slurm accounts each user may charge: their associations in Slurm's accounting (sacctmgr), shared.

A user in several projects picks the account a session charges (the form, the
API's `account`); one they are not in is refused with their accounts named,
before anything is submitted.  One `sacctmgr show associations` and one more
of the default associations only (each user's default account) serve every user, reused for
`slurm.accounts_seconds`: the calls do not grow with the users looking.  The
parsers (spawner/slurmassociations.py) are pure and tested by equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...slurmshares import Shares
from ..request.options import AccountFacts


@dataclass(frozen=True)
class Accounts:
    """Each user's accounts, their default first, then by name; the QOS each association allows, and each QOS's
    MaxWall."""

    by_user: dict[str, tuple[str, ...]]
    qos: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # (user, account) -> QOS allowed
    max_minutes: dict[str, int | None] = field(default_factory=dict)  # QOS -> MaxWall in minutes (None: none)
    shares: Shares = field(default_factory=lambda: Shares({}, {}))  # allocations and fairshare (sshare)

    def of(self, user: str) -> tuple[str, ...]:
        return self.by_user.get(user, ())

    def facts(self, user: str) -> AccountFacts:
        accounts = self.of(user)
        return AccountFacts(
            allowed={a: self.qos.get((user, a), ()) for a in accounts},
            max_minutes=dict(self.max_minutes),
            default_account=accounts[0] if accounts else "",
            gpu_minutes_left={
                a: left
                for a in accounts
                if a in self.shares.allocations and (left := self.shares.allocations[a].left_minutes) is not None
            },
        )

    def allocation_of(self, user: str, account: str) -> dict:
        """What the form says of an account: its GPU-hours (limit and left; None: no allocation) and the user's
        fairshare factor there (None: Slurm gave none)."""
        allocation = self.shares.allocations.get(account)
        limit = None if allocation is None else allocation.limit_minutes
        left = None if allocation is None else allocation.left_minutes
        return {
            "gpu_hours": None if limit is None else round(limit / 60, 1),
            "gpu_hours_left": None if left is None else round(left / 60, 1),
            "fairshare": self.shares.fairshare.get((user, account)),
        }

    def to_dict(self, user: str, offered: dict[str, str] | None = None) -> dict:
        """The accounts API: the user's accounts, and each QOS the admin offers (`offered`: name -> label) with
        its longest session and the accounts of the user's that allow it."""
        accounts = self.of(user)
        qos = [
            {
                "name": name,
                "label": label,
                "max_hours": None if self.max_minutes.get(name) is None else self.max_minutes[name] / 60,
                "accounts": [a for a in accounts if name in self.qos.get((user, a), ())],
            }
            for name, label in (offered or {}).items()
        ]
        return {
            "accounts": list(accounts),
            "default": accounts[0] if accounts else "",
            "qos": qos,
            "allocations": {a: self.allocation_of(user, a) for a in accounts},
        }


def qos_by_association(associations: list[tuple[str, str, tuple[str, ...]]]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(user, account) -> every QOS any of its associations allows (a site may keep one per partition; Slurm
    holds each job to its own)."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for user, account, allowed in associations:
        found[(user, account)] = tuple(dict.fromkeys([*found.get((user, account), ()), *allowed]))
    return found


def accounts_of(
    associations: list[tuple[str, str, tuple[str, ...]]],
    defaults: list[tuple[str, str]],
    max_minutes: dict[str, int | None] | None = None,
    shares: Shares | None = None,
) -> Accounts:
    default = dict(defaults)
    mine: dict[str, set[str]] = {}
    for user, account, _ in associations:
        mine.setdefault(user, set()).add(account)
    return Accounts(
        {user: tuple(sorted(accounts, key=lambda a: (a != default.get(user), a))) for user, accounts in mine.items()},
        qos=qos_by_association(associations),
        max_minutes=dict(max_minutes or {}),
        shares=shares or Shares({}, {}),
    )

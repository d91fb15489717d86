"""Which Slurm accounts each user may charge: their associations in Slurm's accounting (sacctmgr), shared.

A user in several projects picks the account a session charges (the form, the
API's `account`); one they are not in is refused with their accounts named,
before anything is submitted.  One `sacctmgr show associations` and one
`sacctmgr show users` (for the default accounts) serve every user, reused for
`slurm.accounts_seconds`: the calls do not grow with the users looking.  The
parsers are pure and tested by equality.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...slurmvocab import UnreadableAnswer

FIELDS = ("User", "Account")


def associations_argv(sacctmgr: str) -> list[str]:
    """Every user association (user|account), whatever the cluster: an account's own rows have no user."""
    return [sacctmgr, "--noheader", "--parsable2", "show", "associations", f"format={','.join(FIELDS)}"]


def default_accounts_argv(sacctmgr: str) -> list[str]:
    return [sacctmgr, "--noheader", "--parsable2", "show", "users", "format=User,DefaultAccount"]


def parse_pairs(output: str) -> list[tuple[str, str]]:
    """'alice|vision' lines -> [('alice', 'vision')]; an account's own lines ('|vision') are left out."""
    pairs = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 2:
            raise UnreadableAnswer(f"unreadable sacctmgr line: {line[:200]!r}")
        if parts[0]:
            pairs.append((parts[0], parts[1]))
    return pairs


@dataclass(frozen=True)
class Accounts:
    """Each user's accounts, their default first, then by name."""

    by_user: dict[str, tuple[str, ...]]

    def of(self, user: str) -> tuple[str, ...]:
        return self.by_user.get(user, ())

    def to_dict(self, user: str) -> dict:
        accounts = self.of(user)
        return {"accounts": list(accounts), "default": accounts[0] if accounts else ""}


def accounts_of(associations: list[tuple[str, str]], defaults: list[tuple[str, str]]) -> Accounts:
    default = dict(defaults)
    mine: dict[str, set[str]] = {}
    for user, account in associations:
        mine.setdefault(user, set()).add(account)
    return Accounts(
        {user: tuple(sorted(accounts, key=lambda a: (a != default.get(user), a))) for user, accounts in mine.items()}
    )

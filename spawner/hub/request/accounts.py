"""Who may run a session: the unix account behind a portal user, checked before anything is submitted.

Runs in the hub.  The hub submits jobs with `sudo -u USER`, so a portal user
that maps to root or a system account (an admin's `POST /hub/api/users/root`,
an LDAP login that matches `daemon`) must never get that far.  The sudoers
rule (deploy/sudoers.d/dsportal) refuses the same accounts; this check says
why in words, and refuses before sudo is asked.
"""

from __future__ import annotations

import grp
from dataclasses import dataclass

from portal.settings import SlurmSettings, is_username


@dataclass(frozen=True)
class UnixAccount:
    name: str
    uid: int
    home: str
    shell: str
    groups: frozenset[str]


def group_names(gids: list[int]) -> frozenset[str]:
    names = set()
    for gid in gids:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:  # a gid without a name: no group to match
            continue
    return frozenset(names)


def refusal(account: UnixAccount, slurm: SlurmSettings, uid_number: int | None = None) -> str | None:
    """Why `account` may not run a session (a sentence for the user), or None."""
    if account.uid == 0 or account.name in slurm.deny_users or account.uid < slurm.min_uid:
        return (
            f"The account {account.name!r} cannot run sessions here: root and system accounts never do. "
            "Log in with your own cluster account."
        )
    if slurm.user_groups and not account.groups & set(slurm.user_groups):
        return (
            f"The account {account.name!r} is not in a group of portal users "
            f"({', '.join(slurm.user_groups)}); ask the cluster admins for access."
        )
    if uid_number is not None and uid_number != account.uid:
        return (
            f"The account {account.name!r} on the cluster (uid {account.uid}) is not the directory's "
            f"{account.name!r} (uidNumber {uid_number}); ask the cluster admins to fix the accounts."
        )
    return None


class AccountRefused(Exception):
    """A portal user who may not run sessions; the text is what they read."""


def lookup(name: str, slurm: SlurmSettings, getpwnam, getgrouplist) -> UnixAccount:
    """The unix account `name`'s sessions run as; AccountRefused for root, system accounts and anyone refused.

    `getpwnam` and `getgrouplist` are the system's lookups (the spawner's seams for tests).
    """
    if not is_username(name):
        raise AccountRefused(f"The username {name!r} cannot run cluster jobs; ask the cluster admins.")
    try:
        entry = getpwnam(name)
    except KeyError:
        raise AccountRefused(
            f"There is no cluster account {name!r} on the head node; ask the cluster admins."
        ) from None
    account = UnixAccount(
        name=entry.pw_name,
        uid=entry.pw_uid,
        home=entry.pw_dir,
        shell=entry.pw_shell or "/bin/bash",
        groups=group_names(getgrouplist(entry.pw_name, entry.pw_gid)),
    )
    why = refusal(account, slurm)
    if why:
        raise AccountRefused(why)
    return account

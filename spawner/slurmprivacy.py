"""What Slurm hides from the hub's account: PrivateData, and the privilege that sees through it (pure).

A site with `PrivateData=jobs` (slurm.conf for squeue, slurmdbd.conf for sacct) shows each user only their own
jobs.  The hub lists every job with one squeue as its own service account, and a session missing from a
listing that succeeded is an ended session: an account that sees only its own jobs takes every running
session for ended.  Slurm has no read-only role that sees through PrivateData; the least that does is a
**coordinator** of the accounts the portal's users charge (Slurm's `root` account covers every one of them).
An Operator or Administrator sees everything too, with much more power (any account, user, QOS and
reservation).  Shared by the hub (spawner/hub/slurm/visibility.py) and `dsportal doctor`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .slurmvocab import UnreadableAnswer

# What each PrivateData flag hides from an account without the privilege, and what the portal loses with it
HIDES = {
    "jobs": "every other user's job, so running sessions would be taken for ended",
    "usage": "every other user's usage (sshare), so the form would show no allocations",
    "users": "every other user's associations, so the form would not know their accounts",
    "accounts": "the accounts it does not coordinate, so the form would offer no accounts",
}
SEES_ALL = ("operator", "administrator")  # AdminLevel values that see through every PrivateData flag
TOP_ACCOUNT = "root"  # Slurm's own top account: its coordinator coordinates every account below it


@dataclass(frozen=True)
class Privilege:
    """The hub account's rank in Slurm's database: its AdminLevel and the accounts it coordinates."""

    admin_level: str = "None"
    coordinates: frozenset[str] = frozenset()

    def sees_every_job(self) -> bool:
        return self.admin_level.lower() in SEES_ALL or TOP_ACCOUNT in self.coordinates


def show_config_argv(scontrol: str) -> list[str]:
    return [scontrol, "show", "config"]


def parse_show_config(output: str) -> dict[str, str]:
    """`scontrol show config` ('Name = value' lines, cgroup.conf's among them) -> {name: value}."""
    found = {}
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() and " " not in name.strip():
            found[name.strip()] = value.strip()
    return found


def private_data(config: dict[str, str]) -> frozenset[str]:
    """slurm.conf's PrivateData flags ('none', unset or '(null)': none) as lower-case words."""
    value = config.get("PrivateData", "none").strip().lower()
    return frozenset(flag.strip() for flag in value.split(",") if flag.strip() not in ("", "none", "(null)"))


def privilege_argv(sacctmgr: str, user: str) -> list[str]:
    """The account's AdminLevel and coordinated accounts (an account may always read its own record)."""
    return [
        sacctmgr,
        "--noheader",
        "--parsable2",
        "show",
        "user",
        user,
        "withcoord",
        "format=User,AdminLevel,Coordinators",
    ]


def parse_privilege(output: str, user: str) -> Privilege:
    """'dsportal|None|root,vision' -> Privilege('None', {'root', 'vision'}); no line: an account Slurm does not
    know (no rank at all)."""
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 3:
            raise UnreadableAnswer(f"unreadable sacctmgr user line: {line[:200]!r}")
        if fields[0] == user:
            coordinated = frozenset(a.strip() for a in fields[2].split(",") if a.strip())
            return Privilege(fields[1].strip() or "None", coordinated)
    return Privilege()


def hidden_from(flags: frozenset[str], privilege: Privilege) -> list[str]:
    """The PrivateData flags that hide what the hub needs from an account of `privilege` (in HIDES' order)."""
    if privilege.admin_level.lower() in SEES_ALL:
        return []
    if TOP_ACCOUNT in privilege.coordinates:
        # a coordinator sees the jobs, usage, accounts and associations it coordinates; it lists no other user's
        # record, but the default accounts come from the default associations (spawner/slurmassociations.py)
        return []
    return [flag for flag in HIDES if flag in flags]


def what_to_change(user: str, hidden: list[str]) -> str:
    """The sentence an admin reads when Slurm hides what the hub needs (hub log and `dsportal doctor`)."""
    if not hidden:
        return ""
    return (
        f"Slurm's PrivateData ({','.join(hidden)}) hides from {user} "
        + "; ".join(HIDES[flag] for flag in hidden)
        + f". Make {user} a coordinator of Slurm's root account: `sacctmgr add user {user} account=root "
        f"MaxSubmitJobs=0` then `sacctmgr add coordinator account=root names={user}`"
    )

"""What Slurm hides from the hub's account: PrivateData, and the rank that sees through it (pure).

A site with `PrivateData=jobs` (slurm.conf for squeue, slurmdbd.conf for sacct) shows each user only their own
jobs.  The hub lists every job with one squeue as its own service account, and a session missing from a
listing that succeeded is an ended session: an account that sees only its own jobs takes every running
session for ended.  Slurm has no read-only role that sees through PrivateData.  The least that does is a
**coordinator** of every account the portal's users charge (Slurm lists a coordinator of an account as one
of its sub-accounts too); an Operator or Administrator sees everything, with much more power.  A coordinator
sees no more than a user where slurmdbd.conf sets `Parameters=DisableCoordDBD`, and nothing of `nodes` or
`partitions`.  Shared by the hub (spawner/hub/slurm/visibility.py) and `dsportal doctor`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .slurmvocab import UnreadableAnswer

# What each PrivateData flag hides from an account without the rank, and what the portal loses with it
HIDES = {
    "jobs": "every other user's job, so running sessions would be taken for ended",
    "usage": "every other user's usage (sshare), so the form would show no allocations",
    "users": "every other user's associations, so the form would not know their accounts",
    "accounts": "the accounts it does not coordinate, so the form would offer no accounts",
    "nodes": "the nodes (sinfo), so the form would show no free GPUs",
    "partitions": "the partitions (sinfo), so the form would offer none",
}
COORDINATED = ("jobs", "usage", "users", "accounts")  # what a coordinator sees of the accounts it coordinates
SEES_ALL = ("operator", "administrator")  # AdminLevel values that see through every PrivateData flag
DBD_SECTION = "SlurmDBD configuration:"  # where `sacctmgr show config` begins slurmdbd.conf's part


@dataclass(frozen=True)
class Privacy:
    """What Slurm keeps private: slurm.conf's and slurmdbd.conf's PrivateData flags, and whether coordinators
    see no more than users (slurmdbd's DisableCoordDBD)."""

    flags: frozenset[str] = frozenset()
    coordinators_blind: bool = False


@dataclass(frozen=True)
class Privilege:
    """The hub account's rank in Slurm's database: its AdminLevel and the accounts it coordinates."""

    admin_level: str = "None"
    coordinates: frozenset[str] = frozenset()


def config_argv(sacctmgr: str) -> list[str]:
    """slurm.conf's accounting settings as the head node reads them, then slurmdbd's own (asked of slurmdbd)."""
    return [sacctmgr, "show", "config"]


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
    """A PrivateData value ('none', unset or '(null)': none) as lower-case words."""
    value = config.get("PrivateData", "none").strip().lower()
    return frozenset(flag.strip() for flag in value.split(",") if flag.strip() not in ("", "none", "(null)"))


def parse_privacy(output: str) -> Privacy:
    """`sacctmgr show config`: slurm.conf's PrivateData, then slurmdbd.conf's (and its Parameters) -> Privacy."""
    ours, _, dbd = output.partition(DBD_SECTION)
    mine, theirs = parse_show_config(ours), parse_show_config(dbd)
    blind = "disablecoorddbd" in theirs.get("Parameters", "").lower().replace(" ", "")
    return Privacy(private_data(mine) | private_data(theirs), blind)


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
    """'dsportal|None|nlp,vision' -> Privilege('None', {'nlp', 'vision'}); no line: an account Slurm's database does
    not know (no rank at all)."""
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


def charged_accounts(pairs: list[tuple[str, str]], users: frozenset[str] | None = None) -> frozenset[str]:
    """The accounts the portal's `users` may charge (every user but root where `users` is None), from sacctmgr's
    (user, account) pairs as root or an Operator sees them (doctor)."""
    return frozenset(a for u, a in pairs if u and u != "root" and (users is None or u in users))


def uncoordinated(privilege: Privilege, charged: frozenset[str]) -> list[str]:
    """The users' accounts the hub's account does not coordinate (their jobs Slurm would hide from it)."""
    return sorted(charged - privilege.coordinates)


def hidden_from(privacy: Privacy, privilege: Privilege, charged: frozenset[str] | None = None) -> list[str]:
    """The PrivateData flags that hide what the hub needs from an account of `privilege` (in HIDES' order).

    `charged`: every account the portal's users may charge, where known (doctor, as root).  The hub itself cannot
    know them (under PrivateData it sees only the associations it coordinates): it takes any coordinator for one
    of them all, and doctor names the accounts left out."""
    if privilege.admin_level.lower() in SEES_ALL:
        return []
    covered = not uncoordinated(privilege, charged) if charged is not None else bool(privilege.coordinates)
    sees = covered and not privacy.coordinators_blind
    return [flag for flag in HIDES if flag in privacy.flags and not (sees and flag in COORDINATED)]


def what_to_change(user: str, hidden: list[str], missing: list[str], privacy: Privacy) -> str:
    """The sentence an admin reads when Slurm hides what the hub needs (hub log and `dsportal doctor`)."""
    if not hidden:
        return ""
    words = f"Slurm's PrivateData ({','.join(hidden)}) hides from {user} " + "; ".join(HIDES[f] for f in hidden)
    if set(hidden) - set(COORDINATED):
        return f"{words}. Leave nodes and partitions out of PrivateData (only an Operator sees them)"
    if privacy.coordinators_blind:
        return f"{words}. Remove DisableCoordDBD from slurmdbd.conf's Parameters: with it no coordinator sees more"
    accounts = ",".join(missing) or "ACCOUNTS"
    return (
        f"{words}. Make {user} a coordinator of the accounts the portal's users charge: "
        f"`sacctmgr add coordinator account={accounts} names={user}` (docs: admins/slurm, Private job data)"
    )

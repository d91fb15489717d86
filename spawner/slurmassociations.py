"""sacctmgr's vocabulary: every user's Slurm accounts and the QOS each allows, asked and read (standard library only).

The hub reads them for the form (spawner/hub/slurm/associations.py), `dsportal doctor` to check the admin
config's account (portal/admin/doctorslurm.py).
"""

from __future__ import annotations

from .slurmvocab import UnreadableAnswer, parse_limit

FIELDS = ("User", "Account", "QOS")


def associations_argv(sacctmgr: str) -> list[str]:
    """Every user association (user|account|QOS it allows), whatever the cluster: an account's own rows have no
    user."""
    return [sacctmgr, "--noheader", "--parsable2", "show", "associations", f"format={','.join(FIELDS)}"]


def qos_argv(sacctmgr: str) -> list[str]:
    """Every QOS with its MaxWall (the longest job it runs)."""
    return [sacctmgr, "--noheader", "--parsable2", "show", "qos", "format=Name,MaxWall"]


def job_qos_argv(squeue: str, job_id: str) -> list[str]:
    """The QOS a job runs in (the extension helper holds an extension to its MaxWall)."""
    return [squeue, "--noheader", f"--jobs={job_id}", "--format=%q"]


def parse_associations(output: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """'alice|nlp|long,normal' lines -> [('alice', 'nlp', ('long', 'normal'))]; an account's own lines ('|nlp|normal')
    are left out."""
    found = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 3:
            raise UnreadableAnswer(f"unreadable sacctmgr line: {line[:200]!r}")
        if parts[0]:
            found.append((parts[0], parts[1], tuple(q for q in parts[2].split(",") if q)))
    return found


def parse_qos_limits(output: str) -> dict[str, int | None]:
    """'short|01:00:00' and 'normal|' lines -> {'short': 60, 'normal': None}: each QOS's MaxWall in minutes."""
    limits: dict[str, int | None] = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        name, sep, wall = line.partition("|")
        try:
            limits[name] = parse_limit(wall) if wall.strip() else None
        except ValueError:
            raise UnreadableAnswer(f"unreadable sacctmgr line: {line[:200]!r}") from None
        if not sep or not name:
            raise UnreadableAnswer(f"unreadable sacctmgr line: {line[:200]!r}")
    return limits


def default_accounts_argv(sacctmgr: str) -> list[str]:
    """Each user's default account, as their default association ('alice|vision'): a coordinator reads these
    under PrivateData=users, where `show users` gives it its own record only (spawner/slurmprivacy.py)."""
    return [sacctmgr, "--noheader", "--parsable2", "show", "associations", "onlydefaults", "format=User,Account"]


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

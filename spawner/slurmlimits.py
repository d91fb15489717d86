"""The limits Slurm holds a job's time to, asked and read (standard library only), for the extension helper.

`scontrol update TimeLimit=` as root is held to none of them (spawner/root/extend.py), so the helper reads what
Slurm would apply to the user's own `sbatch --time`: the QOS's and the associations' MaxWall in Slurm's order
(https://slurm.schedmd.com/resource_limits.html: the partition's QOS, the job's QOS, the user's association,
its accounts up to root; the first that sets a limit is the one that holds; a job QOS flagged OverPartQOS comes
before the partition's), and the GrpTRESMins of those QOS and associations: the minutes an extension adds, times
the job's TRES, must fit in what is left.  The associations and their usage come from slurmctld's own view
(`scontrol show assoc_mgr`), the one it enforces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .slurmvocab import UnreadableAnswer, time_limit

_QOS_OF_PARTITION = re.compile(r"(?:^|\s)QOS=(\S+)", re.IGNORECASE)  # 22.05 prints QoS=
_TRES = re.compile(r"([^=,]+)=(N|[0-9]+)\(([0-9]+)\)")
_NAMED = re.compile(r"(.*)\([0-9]+\)")  # dave(1003), root(1): a name and its id


@dataclass(frozen=True)
class Group:
    """One QOS or association as slurmctld holds it: its MaxWall (minutes; None = not set) and GrpTRESMins
    ({TRES: (limit, used minutes)})."""

    max_wall: int | None = None
    tres_minutes: dict[str, tuple[int, int]] = field(default_factory=dict)
    parent: str = ""  # an account's own record: the account above it ("" at root)


@dataclass(frozen=True)
class JobCharge:
    """What a job is charged to: its QOS, its account and the TRES it holds ({'cpu': 2, 'gres/gpu': 1})."""

    qos: str
    account: str
    tres: dict[str, int]


def job_charge_argv(squeue: str, job_id: str) -> list[str]:
    return [squeue, "--noheader", f"--jobs={job_id}", "--Format=QOS:|,Account:|,tres-alloc:|"]


def assoc_mgr_argv(scontrol: str, user: str, account: str) -> list[str]:
    """slurmctld's association of `user` in `account` and the account's own, with their usage, one a line."""
    return [scontrol, "--oneliner", "show", "assoc_mgr", "flags=assoc", f"users={user}", f"accounts={account}"]


def qos_mgr_argv(scontrol: str, names: list[str]) -> list[str]:
    """slurmctld's QOS `names`, with their usage, one a line."""
    return [scontrol, "--oneliner", "show", "assoc_mgr", "flags=qos", f"qos={','.join(names)}"]


def qos_flags_argv(sacctmgr: str) -> list[str]:
    return [sacctmgr, "--noheader", "--parsable2", "show", "qos", "format=Name,Flags"]


def parse_job_charge(output: str) -> JobCharge:
    """'normal|vision|cpu=2,mem=4G,node=1,billing=2,gres/gpu=1|' -> JobCharge('normal', 'vision', {...})."""
    fields = output.strip().split("|")
    if len(fields) not in (3, 4) or any(fields[3:]) or not all(fields[:2]):
        raise UnreadableAnswer(f"unreadable squeue answer: {output[:200]!r}")
    tres = {}
    for item in filter(None, fields[2].split(",")):
        name, _, count = item.partition("=")
        if count.isdigit():  # mem=4G and the like are not counted in whole units: no minutes limit on them here
            tres[name] = int(count)
    return JobCharge(fields[0], fields[1], tres)


def parse_partition_qos(output: str) -> str:
    """`scontrol --oneliner show partition P` -> the partition's QOS ('' when it has none)."""
    match = _QOS_OF_PARTITION.search(output)
    if not match:
        raise UnreadableAnswer("scontrol printed no QOS for the partition")
    return "" if match.group(1) in ("N/A", "(null)") else match.group(1)


def parse_qos_flags(output: str) -> dict[str, frozenset[str]]:
    """'long|OverPartQOS,DenyOnLimit' lines -> {'long': frozenset({'OverPartQOS', 'DenyOnLimit'})}."""
    flags = {}
    for line in filter(str.strip, output.splitlines()):
        name, sep, words = line.partition("|")
        if not sep or not name:
            raise UnreadableAnswer(f"unreadable sacctmgr line: {line[:200]!r}")
        flags[name] = frozenset(filter(None, words.split(",")))
    return flags


def _fields(line: str) -> dict[str, str]:
    return dict(word.partition("=")[::2] for word in line.split() if "=" in word)


def _group(fields: dict[str, str], parent: str = "") -> Group:
    wall = fields.get("MaxWallPJ", "")
    tres = {
        n: (int(limit), int(used)) for n, limit, used in _TRES.findall(fields.get("GrpTRESMins", "")) if limit != "N"
    }
    return Group(int(wall) if wall.isdigit() else None, tres, parent)


def _name(text: str) -> str:
    match = _NAMED.fullmatch(text)
    return match.group(1) if match else text


def parse_assoc_mgr(output: str) -> tuple[dict[tuple[str, str, str], Group], dict[str, Group]]:
    """`scontrol --oneliner show assoc_mgr ...` -> ({(account, user, partition): Group}, {QOS: Group}).

    Limits shown as N (none) are left out of tres_minutes; MaxWallPJ is in minutes."""
    associations, qos = {}, {}
    for line in output.splitlines():
        fields = _fields(line)
        try:
            if line.startswith("ClusterName="):
                key = (fields["Account"], _name(fields.get("UserName", "")), fields.get("Partition", ""))
                associations[key] = _group(fields, _name(fields.get("ParentAccount", "")))
            elif line.startswith("QOS="):
                qos[_name(fields["QOS"])] = _group(fields)
        except (KeyError, ValueError):
            raise UnreadableAnswer(f"unreadable assoc_mgr line: {line[:200]!r}") from None
    return associations, qos


# --- the rules ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Charged:
    """One QOS or association a job is held to, with the words that name it to the user."""

    words: str
    group: Group


def charged_to(
    charge: JobCharge,
    user: str,
    partition: str,
    partition_qos: str,
    associations: dict[tuple[str, str, str], Group],
    qos: dict[str, Group],
    qos_flags: dict[str, frozenset[str]],
) -> list[Charged]:
    """The QOS and associations Slurm holds the job to, in Slurm's order; UnreadableAnswer when one is missing
    (a limit not read is no limit)."""
    names = [partition_qos, charge.qos]
    if "OverPartQOS" in qos_flags.get(charge.qos, ()):
        names.reverse()
    found = []
    for name in dict.fromkeys(filter(None, names)):
        if name not in qos:
            raise UnreadableAnswer(f"slurmctld holds no QOS {name!r}")
        words = f"The session's QOS {name}" if name == charge.qos else f"Partition {partition}'s QOS {name}"
        found.append(Charged(words, qos[name]))
    key = (charge.account, user, partition) if (charge.account, user, partition) in associations else None
    key = key or (charge.account, user, "")
    if key not in associations:
        raise UnreadableAnswer(f"slurmctld holds no association of {user} in account {charge.account}")
    found.append(Charged(f"Your Slurm association (user {user}, account {charge.account})", associations[key]))
    account, seen = charge.account, set()
    while account and account not in seen:  # the account's own record, then each account above it
        seen.add(account)
        group = associations.get((account, "", ""))
        if group is None:
            raise UnreadableAnswer(f"slurmctld holds no association of account {account}")
        found.append(Charged(f"Account {account}, above your association,", group))
        account = group.parent
    return found


def max_wall(charged: list[Charged]) -> tuple[int, str] | None:
    """The MaxWall that holds (the first one set, in Slurm's order) and its words; None: none is set."""
    for one in charged:
        if one.group.max_wall is not None:
            words = f"{one.words} has a MaxWall of {time_limit(one.group.max_wall)}"
            return one.group.max_wall, f"{words}: at most {one.group.max_wall} minutes per job."
    return None


def tres_minutes_refusal(charged: list[Charged], tres: dict[str, int], added: int) -> str | None:
    """Why `added` minutes more of a job holding `tres` would pass a GrpTRESMins (each level holds); None: none."""
    for one in charged:
        for name, (limit, used) in one.group.tres_minutes.items():
            need = tres.get(name, 0) * added
            if need and used + need > limit:
                return (
                    f"{one.words} has {max(limit - used, 0)} of its GrpTRESMins {name}={limit} left; "
                    f"{added} more minutes of this session would take {need}."
                )
    return None

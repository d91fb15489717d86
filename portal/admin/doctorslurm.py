"""`dsportal doctor`'s checks of the site's Slurm beyond its answering: confinement, GPU types and accounts.

A real GPU cluster confines each job to its own GPUs, cores and memory (task/cgroup and cgroup.conf's
Constrain*); without that a session opens its neighbours' GPUs on a shared node.  The admin config's GPU type
labels, hidden types and account must name what Slurm has, or the form offers what sbatch refuses.  Each check is
a function of doctor's Context; the parser is pure.
"""

from __future__ import annotations

import contextlib
import grp
import subprocess
from collections.abc import Callable
from typing import Protocol

from spawner.slurmassociations import associations_argv, parse_associations
from spawner.slurmgres import gpus_by_type
from spawner.slurmprivacy import (
    SEES_ALL,
    Privacy,
    Privilege,
    charged_accounts,
    config_argv,
    hidden_from,
    parse_privacy,
    parse_privilege,
    parse_show_config,
    privilege_argv,
    show_config_argv,
    uncoordinated,
    what_to_change,
)
from spawner.slurmvocab import UnreadableAnswer, partitions_gres_argv

from ..settings import PortalSettings


class Context(Protocol):
    """What these checks read of doctor's Context (a Protocol: doctor imports this module)."""

    settings: PortalSettings
    service_account: str
    sample_user: str
    run: Callable[[list[str]], subprocess.CompletedProcess]


Finding = tuple[str, bool, str]  # doctor's Result: (name, ok, what was found or what to fix)

# cgroup.conf's switches a GPU site needs, each with what goes wrong without it
CONSTRAINTS = {
    "ConstrainDevices": "a session can open every GPU of its node, its neighbours' too",
    "ConstrainCores": "a session's processes can run on the cores of other jobs",
    "ConstrainRAMSpace": "a session can take memory it did not ask for, and the node's other jobs are killed for it",
}


def cgroup_findings(config: dict[str, str]) -> list[Finding]:
    """(name, ok, words) for the process tracking, the task plugin and each Constrain* switch."""
    proctrack = config.get("ProctrackType", "(unset)")
    tasks = config.get("TaskPlugin", "(unset)")
    confined = "task/cgroup" in tasks
    found = [
        (
            "slurm proctrack",
            proctrack == "proctrack/cgroup",
            proctrack
            if proctrack == "proctrack/cgroup"
            else f"ProctrackType={proctrack}: a process that leaves its job's process group outlives scancel; "
            "set ProctrackType=proctrack/cgroup in slurm.conf",
        ),
        (
            "slurm task plugin",
            confined,
            tasks
            if confined
            else f"TaskPlugin={tasks}: no job is confined; set TaskPlugin=task/cgroup (task/affinity may stay "
            "beside it) in slurm.conf, with cgroup.conf",
        ),
    ]
    for switch, without in CONSTRAINTS.items():
        on = confined and config.get(switch, "no").lower() == "yes"
        found.append(
            (
                f"cgroup {switch}",
                on,
                "yes" if on else f"{without}; set {switch}=yes in cgroup.conf (and TaskPlugin=task/cgroup)",
            )
        )
    return found


def cgroups(ctx: Context) -> list[Finding]:
    out = ctx.run(show_config_argv(ctx.settings.slurm.scontrol))
    if out.returncode != 0:
        return [("slurm config", False, f"scontrol show config failed: {out.stderr.strip()[:200]}")]
    return cgroup_findings(parse_show_config(out.stdout))


def privacy_findings(
    account: str, privacy: Privacy, privilege: Privilege | None, charged: frozenset[str] | None, mcs: str = ""
) -> list[Finding]:
    """Slurm's PrivateData against the hub account's rank: whether the hub still sees what it needs (pure)."""
    if not privacy.flags or privilege is None:
        return [("slurm private data", True, f"PrivateData is off: {account} sees every job and account")]
    if "privatedata" in mcs.lower() and privilege.admin_level.lower() not in SEES_ALL:
        return [
            (
                "slurm private data",
                False,
                f"MCSParameters={mcs} keeps jobs private by MCS label, which no coordinator sees through: make "
                f"{account} an Operator (sacctmgr modify user {account} set AdminLevel=Operator) or drop privatedata",
            )
        ]
    hidden = hidden_from(privacy, privilege, charged)
    if hidden:
        missing = uncoordinated(privilege, charged or frozenset())
        return [("slurm private data", False, what_to_change(account, hidden, missing, privacy))]
    rank = f"AdminLevel {privilege.admin_level}" + (
        f", coordinator of {', '.join(sorted(privilege.coordinates))}" if privilege.coordinates else ""
    )
    return [
        (
            "slurm private data",
            True,
            f"PrivateData={','.join(sorted(privacy.flags))}; {account} ({rank}) sees every job",
        )
    ]


def privacy(ctx: Context) -> list[Finding]:
    slurm = ctx.settings.slurm
    config = ctx.run(config_argv(slurm.sacctmgr))
    if config.returncode != 0:
        return [("slurm private data", False, f"{slurm.sacctmgr} show config failed: {config.stderr.strip()[:200]}")]
    private = parse_privacy(config.stdout)
    if not private.flags:
        return privacy_findings(ctx.service_account, private, None, None)
    rank = ctx.run(privilege_argv(slurm.sacctmgr, ctx.service_account))
    pairs = ctx.run(associations_argv(slurm.sacctmgr))  # as root (or an Operator): every user's associations
    mcs = parse_show_config(ctx.run(show_config_argv(slurm.scontrol)).stdout).get("MCSParameters", "")
    if rank.returncode != 0 or pairs.returncode != 0:
        return [
            ("slurm private data", False, f"{slurm.sacctmgr} failed: {(rank.stderr or pairs.stderr).strip()[:200]}")
        ]
    try:
        privilege = parse_privilege(rank.stdout, ctx.service_account)
        users = frozenset(portal_users(ctx.settings.slurm.user_groups)) or None
        charged = charged_accounts([(u, a) for u, a, _ in parse_associations(pairs.stdout)], users)
    except UnreadableAnswer as e:
        return [("slurm private data", False, str(e))]
    return privacy_findings(ctx.service_account, private, privilege, charged, mcs)


def portal_users(groups: list[str]) -> set[str]:
    """The members the portal's unix groups list (none where membership is by primary group only)."""
    found: set[str] = set()
    for group in groups:
        with contextlib.suppress(KeyError):
            found.update(grp.getgrnam(group).gr_mem)
    return found


def partition_types(output: str) -> dict[str, set[str]]:
    """`sinfo --format=%P|%G` lines -> {partition: its GPU types} ('' for untyped GPUs)."""
    types: dict[str, set[str]] = {}
    for line in output.splitlines():
        name, _, gres = line.partition("|")
        types.setdefault(name.rstrip("*"), set()).update(gpus_by_type(gres))
    return types


def type_findings(labels: dict[str, str], hidden: list[str], slurm_types: set[str]) -> list[Finding]:
    """The config's labelled and hidden GPU types against the types of its partitions' nodes."""
    unknown = sorted((set(labels) | set(hidden)) - slurm_types)
    has = ", ".join(sorted(t for t in slurm_types if t)) or "no typed GPUs"
    if unknown:
        return [
            (
                "gpu types",
                False,
                f"slurm.gpu_types or slurm.hidden_gpu_types name {', '.join(unknown)}, which no node of the "
                f"portal's partitions has (Slurm has {has}); fix the type names or gres.conf",
            )
        ]
    unlabelled = sorted(t for t in slurm_types if t and t not in labels and t not in hidden)
    words = f"Slurm has {has}" + (f"; shown by their Slurm names: {', '.join(unlabelled)}" if unlabelled else "")
    return [("gpu types", True, words)]


def gpu_types(ctx: Context) -> list[Finding]:
    slurm = ctx.settings.slurm
    out = ctx.run(partitions_gres_argv(slurm.sinfo))
    if out.returncode != 0:
        return [("gpu types", False, f"{slurm.sinfo} failed: {out.stderr.strip()[:200]}")]
    types = partition_types(out.stdout)
    offered = set().union(*(types.get(p.name, set()) for p in slurm.partitions))
    return type_findings(slurm.gpu_types, slurm.hidden_gpu_types, offered)


def account_findings(site_account: str, user: str, pairs: list[tuple[str, str]]) -> list[Finding]:
    """The config's account (if any) and the sample user's associations, from sacctmgr's user|account pairs."""
    accounts = sorted({account for _, account in pairs})
    mine = sorted({account for who, account in pairs if who == user})
    if site_account and site_account not in accounts:
        return [
            (
                "slurm accounts",
                False,
                f"slurm.account is {site_account!r}, which Slurm's accounting does not have (it has "
                f"{', '.join(accounts) or 'none'}); fix slurm.account or add it with sacctmgr",
            )
        ]
    if not mine:
        return [
            (
                "slurm accounts",
                False,
                f"{user} is in no Slurm account: with AccountingStorageEnforce=associations their sessions are "
                f"refused; add them with sacctmgr add user {user} account=...",
            )
        ]
    return [("slurm accounts", True, f"{len(accounts)} account(s); {user} may charge {', '.join(mine)}")]


def accounts(ctx: Context) -> list[Finding]:
    slurm = ctx.settings.slurm
    out = ctx.run(associations_argv(slurm.sacctmgr))
    if out.returncode != 0:
        return [
            (
                "slurm accounts",
                False,
                f"{slurm.sacctmgr} failed: {out.stderr.strip()[:200]}; start slurmdbd or fix slurm.sacctmgr",
            )
        ]
    try:
        pairs = [(user, account) for user, account, _ in parse_associations(out.stdout)]
    except UnreadableAnswer as e:
        return [("slurm accounts", False, str(e))]
    return account_findings(slurm.account, ctx.sample_user, pairs)

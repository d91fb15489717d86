"""The dev cluster's Slurm accounts, QOS and associations in slurmdbd, as a real site keeps them.

Three projects: `vision` (every demo user's default), `nlp` (alice's second
project, with a GPU-minutes allocation and at most 2 GPUs per job) and `spent`
(carol's second, whose GPU allocation is used up), fairshare shares 60, 40
and 10; QOS `normal` (Slurm's own), `short` (1 h) and
`long` (12 h), all three allowed to every demo user but bob (normal and short).
slurm.conf enforces them (AccountingStorageEnforce=associations,limits,qos,
deploy/dev/slurmconf.py): Slurm itself refuses a job in an account its user is
not in, above an association's limits, or with a QOS the association does
not allow.  Added after slurmctld registered its cluster (deploy/dev/__main__.py),
each only if missing: `up` twice changes nothing.
"""

from __future__ import annotations

from .common import CLUSTER_NAME, SERVICE_USER, run, say
from .demo import USERS

SACCTMGR = ["sacctmgr", "--immediate", "--noheader", "--parsable2"]
QOS = {"short": ["MaxWall=01:00:00"], "long": ["MaxWall=12:00:00"]}
ACCOUNTS = {
    "vision": ["Fairshare=60", "Description=computer vision", "Organization=dsportal"],
    "nlp": [
        "Fairshare=40",
        "Description=language models",
        "Organization=dsportal",
        "GrpTRESMins=gres/gpu=60000",  # the project's allocation: 1,000 GPU-hours
        "MaxTRESPerJob=gres/gpu=2",
    ],
    # a project whose GPU allocation is used up: Slurm runs none of its GPU jobs (AssocGrpGRESMinutes)
    "spent": ["Fairshare=10", "Description=a finished project", "Organization=dsportal", "GrpTRESMins=gres/gpu=0"],
}
# the hub's own account's home: no job may run in it (GrpSubmitJobs=0), and the hub does not coordinate it
HUB_ACCOUNT = "services"
HUB_ACCOUNT_SETTINGS = ["Description=service accounts", "Organization=dsportal", "GrpSubmitJobs=0"]
SECOND_ACCOUNTS = {"alice": ["nlp"], "carol": ["spent"]}  # alice and carol in two projects; the others in vision
DEFAULT_ACCOUNT = "vision"
USER_QOS = ["QOS=normal,short,long", "DefaultQOS=normal"]
OWN_QOS = {"bob": ["QOS=normal,short", "DefaultQOS=normal"]}  # a user whose associations do not allow `long`


def _listed(what: str, fields: str) -> set[tuple[str, ...]]:
    out = run([*SACCTMGR, "show", what, f"format={fields}"], timeout=30)
    return {tuple(line.split("|")) for line in out.stdout.splitlines() if line.strip()}


def _coordinated(user: str) -> set[str]:
    out = run([*SACCTMGR, "show", "user", user, "withcoord", "format=Coordinators"], timeout=30)
    return {account for line in out.stdout.splitlines() for account in line.strip().split(",") if account}


def ensure_associations() -> None:
    """The QOS, the projects and every demo user's associations, each added if missing."""
    have_qos = {name for (name,) in _listed("qos", "Name")}
    for name, limits in QOS.items():
        if name not in have_qos:
            say(f"adding the Slurm QOS {name}")
            run([*SACCTMGR, "add", "qos", name, *limits], timeout=30)
    associations = _listed("associations", "Cluster,Account,User")
    accounts = {account for cluster, account, user in associations if cluster == CLUSTER_NAME and not user}
    for name, settings in ACCOUNTS.items():
        if name not in accounts:
            say(f"adding the Slurm account {name}")
            run([*SACCTMGR, "add", "account", name, f"Cluster={CLUSTER_NAME}", *settings], timeout=30)
    held = {(account, user) for cluster, account, user in associations if cluster == CLUSTER_NAME and user}
    ensure_hub_rank(accounts, held)
    for (account, qos), names in missing_users(held).items():  # one sacctmgr call per kind: 28 users in seconds
        run(
            [*SACCTMGR, "add", "user", ",".join(names), f"Account={account}", f"Cluster={CLUSTER_NAME}"]
            + [f"DefaultAccount={DEFAULT_ACCOUNT}", *qos],
            timeout=30,
        )


def ensure_hub_rank(accounts: set[str], held: set[tuple[str, str]]) -> None:
    """The hub's account: a record of its own in HUB_ACCOUNT, where nothing may run, and a coordinator of the
    projects (the least rank that sees their jobs through PrivateData: docs/admins/slurm.md).  It coordinates
    neither its own account nor root, so it can lift no limit of its own."""
    if HUB_ACCOUNT not in accounts:
        run([*SACCTMGR, "add", "account", HUB_ACCOUNT, f"Cluster={CLUSTER_NAME}", *HUB_ACCOUNT_SETTINGS], timeout=30)
    if (HUB_ACCOUNT, SERVICE_USER) not in held:
        run([*SACCTMGR, "add", "user", SERVICE_USER, f"Account={HUB_ACCOUNT}", f"Cluster={CLUSTER_NAME}"], timeout=30)
    coordinated = _coordinated(SERVICE_USER)
    if "root" in coordinated:  # a dev cluster made before 2026-11-29 gave it root: more than it needs
        run([*SACCTMGR, "remove", "coordinator", "Account=root", f"Names={SERVICE_USER}"], timeout=30)
        coordinated = _coordinated(SERVICE_USER)
    if ("root", SERVICE_USER) in held:
        run([*SACCTMGR, "remove", "user", SERVICE_USER, "Account=root", f"Cluster={CLUSTER_NAME}"], timeout=30)
    if missing := sorted(set(ACCOUNTS) - coordinated):
        say(f"making {SERVICE_USER} a coordinator of {', '.join(missing)} (it sees their jobs through PrivateData)")
        run([*SACCTMGR, "add", "coordinator", f"Account={','.join(missing)}", f"Names={SERVICE_USER}"], timeout=30)


def missing_users(held: set[tuple[str, str]]) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """The demo users' associations not `held`, grouped by (account, QOS settings) (pure)."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for person in USERS:
        for account in [DEFAULT_ACCOUNT, *SECOND_ACCOUNTS.get(person.name, [])]:
            if (account, person.name) not in held:
                key = (account, tuple(OWN_QOS.get(person.name, USER_QOS)))
                groups.setdefault(key, []).append(person.name)
    return groups

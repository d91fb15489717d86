"""`dsportal-extend-session JOB MINUTES`: raise a portal session's time limit. Runs as root, on the head node.

Only Slurm's operators and SlurmUser may raise a job's time limit; the hub
runs as an unprivileged service account.  The shipped sudoers rule
(deploy/sudoers.d/dsportal) lets the service account run exactly this
helper as root, which does exactly one thing: after checking its two
arguments, that extensions are allowed (slurm.allow_extend in the admin
YAML, read from its fixed root-owned path, never from the caller's
environment), that the job is a running portal session of a portal user,
and that the new limit stays within the admin's maximum and every limit
Slurm would hold the user's own `sbatch --time` to (root is held to none of
them by Slurm): the partition's MaxTime, the MaxWall that holds among the
partition's QOS, the job's QOS, the user's association and the accounts
above it, and their GrpTRESMins (spawner/slurmlimits.py), it runs
`scontrol update JobId=JOB TimeLimit=MINUTES`.  A sudoers wildcard on
scontrol's arguments would allow any update of any job instead.

What it checks comes from Slurm's own fields; the one the job's owner
chooses, its name (which may hold line breaks and "|"), is read last and
whole, and must equal slurm.job_name exactly (spawner/slurmvocab.py,
parse_job): a renamed session is not extended.

On a cluster with slurmdbd, an alternative is to make the service account a
Slurm operator (`sacctmgr modify user dsportal set adminlevel=operator`)
and point slurm.extend_command at a copy of this helper that runs without sudo.

Exit status: 0 done, 2 bad arguments, 3 refused, 4 Slurm did not do it.
Messages go to stderr, in words the hub shows the user.
"""

from __future__ import annotations

import pwd
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence

from portal.config import DEFAULT_PATH, ConfigError, load_config
from portal.settings import SLURM_NAME, PortalSettings, is_username

from ..slurmlimits import (
    Charged,
    assoc_mgr_argv,
    charged_to,
    job_charge_argv,
    max_wall,
    parse_assoc_mgr,
    parse_job_charge,
    parse_partition_qos,
    parse_qos_flags,
    qos_flags_argv,
    qos_mgr_argv,
    tres_minutes_refusal,
)
from ..slurmvocab import Job, job_argv, parse_job, parse_partition_max, partition_argv, time_limit_update_argv

BAD_ARGUMENTS, REFUSED, SLURM_FAILED = 2, 3, 4
MAX_ACCOUNT_DEPTH = 32  # accounts above one another: Slurm's trees are a few deep


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def check_arguments(argv: list[str]) -> tuple[str, int]:
    if len(argv) != 2 or not re.fullmatch(r"[1-9][0-9]{0,9}", argv[0]) or not re.fullmatch(r"[1-9][0-9]{0,6}", argv[1]):
        raise Refused(BAD_ARGUMENTS, "usage: dsportal-extend-session JOB_ID NEW_LIMIT_MINUTES (both whole numbers)")
    return argv[0], int(argv[1])


def check_session(
    settings: PortalSettings, job: Job | None, job_id: str, minutes: int, uid_of=lambda name: pwd.getpwnam(name).pw_uid
) -> Job:
    """Refused unless `job` is a running portal session and `minutes` adds time within the admin's maximum."""
    slurm = settings.slurm
    if not slurm.allow_extend:
        raise Refused(REFUSED, "Extending sessions is not enabled on this portal (slurm.allow_extend).")
    if job is None or job.name != slurm.job_name:
        raise Refused(REFUSED, f"Job {job_id} is not a session of this portal.")
    try:
        uid = uid_of(job.user)
    except KeyError:
        uid = -1
    if not is_username(job.user) or job.user in slurm.deny_users or uid < slurm.min_uid:
        raise Refused(REFUSED, f"Job {job_id} does not belong to a portal user.")
    if job.state != "RUNNING":
        raise Refused(REFUSED, f"Job {job_id} is {job.state.lower()}, not running: only a running session is extended.")
    if job.limit is not None and minutes <= job.limit:
        raise Refused(REFUSED, f"Job {job_id} already has {job.limit} minutes; an extension must add time.")
    if minutes > round(slurm.extend_max_hours * 60):
        raise Refused(
            REFUSED, f"A session may last at most {slurm.extend_max_hours:g} h with extensions on this portal."
        )
    return job


def check_limits(
    job: Job, minutes: int, partition_max: int | None, charged: Sequence[Charged] = (), tres: Mapping[str, int] = {}
) -> None:
    """Refused unless `minutes` is within what Slurm would hold the user's own request to (spawner/slurmlimits.py)."""
    if partition_max is not None and minutes > partition_max:
        raise Refused(REFUSED, f"Partition {job.partition} allows at most {partition_max} minutes per job.")
    wall = max_wall(list(charged))
    if wall is not None and minutes > wall[0]:
        raise Refused(REFUSED, wall[1])
    why = tres_minutes_refusal(list(charged), dict(tres), minutes - (job.limit or minutes))
    if why:
        raise Refused(REFUSED, why)


def check_request(
    settings: PortalSettings,
    job: Job | None,
    job_id: str,
    minutes: int,
    partition_max: int | None,
    uid_of=lambda name: pwd.getpwnam(name).pw_uid,
    charged: Sequence[Charged] = (),
    tres: Mapping[str, int] = {},
) -> None:
    """Refused unless `job` is a running portal session and `minutes` is within every limit (pure but for uid_of)."""
    check_limits(check_session(settings, job, job_id, minutes, uid_of), minutes, partition_max, charged, tres)


def run(argv: list[str], timeout: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Refused(SLURM_FAILED, f"Slurm did not answer ({argv[0]}: {e}); try again in a minute.") from None
    if done.returncode:
        raise Refused(SLURM_FAILED, f"Slurm refused: {done.stderr.strip() or f'{argv[0]} exit {done.returncode}'}")
    return done.stdout


def slurm_facts(settings: PortalSettings, job: Job, job_id: str) -> tuple[int | None, list[Charged], dict[str, int]]:
    """The partition's MaxTime, the QOS and associations Slurm holds the job to, and the TRES it holds."""
    slurm, timeout = settings.slurm, settings.slurm.command_timeout
    partition = run(partition_argv(slurm.scontrol, job.partition), timeout)
    charge = parse_job_charge(run(job_charge_argv(slurm.squeue, job_id), timeout))
    for name in (charge.qos, charge.account):
        if not SLURM_NAME.fullmatch(name):
            raise Refused(SLURM_FAILED, f"Slurm did not say which QOS and account job {job_id} runs in.")
    associations, account = {}, charge.account
    for _ in range(MAX_ACCOUNT_DEPTH):  # the user's association and each account's own, up to root
        associations.update(parse_assoc_mgr(run(assoc_mgr_argv(slurm.scontrol, job.user, account), timeout))[0])
        account = associations[(account, "", "")].parent if (account, "", "") in associations else ""
        if not account or (account, "", "") in associations:
            break
    names = [name for name in (charge.qos, parse_partition_qos(partition)) if name]
    qos = parse_assoc_mgr(run(qos_mgr_argv(slurm.scontrol, names), timeout))[1]
    flags = parse_qos_flags(run(qos_flags_argv(slurm.sacctmgr), timeout))
    charged = charged_to(charge, job.user, job.partition, parse_partition_qos(partition), associations, qos, flags)
    return parse_partition_max(partition), charged, charge.tres


def extend(settings: PortalSettings, job_id: str, minutes: int) -> str:
    slurm = settings.slurm
    try:
        job = parse_job(run(job_argv(slurm.squeue, job_id), slurm.command_timeout), job_id)
        job = check_session(settings, job, job_id, minutes)  # whose job first, then what Slurm holds it to
        check_limits(job, minutes, *slurm_facts(settings, job, job_id))
    except ValueError as e:  # a limit not read is no limit: refused
        raise Refused(SLURM_FAILED, f"Slurm's answer did not read: {e}") from None
    run(time_limit_update_argv(slurm.scontrol, job_id, minutes), slurm.command_timeout)
    return f"Job {job_id}: time limit now {minutes} minutes."


def main(argv: list[str] | None = None) -> int:
    try:
        job_id, minutes = check_arguments(sys.argv[1:] if argv is None else argv)
        try:
            settings = load_config(DEFAULT_PATH)  # the root-owned file, never a path from the caller
        except ConfigError as e:
            raise Refused(REFUSED, f"The portal's config does not load: {e}") from None
        print(extend(settings, job_id, minutes))
        return 0
    except Refused as e:
        print(str(e), file=sys.stderr)
        return e.status


if __name__ == "__main__":
    sys.exit(main())

"""Slurm's vocabulary: what the portal asks Slurm's commands, and what their answers mean.

Standard library only, so that every side uses the same words: the hub
(spawner/hub/slurm/client.py runs the commands, spawner/hub/slurm/clusterinfo.py does the
arithmetic on sinfo), the user's Jupyter server on the compute node
(spawner/jupyter/clock/clock.py asks for its job's end), the root helper
(spawner/root/extend.py) and `dsportal doctor` (portal/admin/doctor.py).

Job states, output formats, the records answers are read into, pure parsers
and pure argument-list builders that take plain command paths.  Running a
command is each side's own business; nothing here runs anything.  Everything
is tested by equality (tests/unit/test_slurmvocab.py).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime

from .slurmgres import gres_facts

log = logging.getLogger("JupyterHub").getChild("slurm")  # parsing is the hub's: a skipped line is logged there

# --- job and node states ---------------------------------------------------------------
PENDING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING = frozenset({"RUNNING", "SUSPENDED", "STOPPED", "SIGNALING", "RESIZING"})
ENDING = frozenset({"COMPLETING", "STAGE_OUT"})
# States in which a node takes new jobs (a trailing * means "not responding"; drain, down ... do not)
USABLE_STATES = frozenset({"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing"})

# --- stderr fragments ------------------------------------------------------------------
# ... that mean "the controller did not answer", not "bad request"
UNAVAILABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Connection timed out",
    "Transport endpoint is not connected",
    "Zero Bytes were transmitted or received",
    "backup controller in standby",
)
INVALID_JOB = "Invalid job id specified"

# --- output formats --------------------------------------------------------------------
# A job's name (and its comment) is the one field its owner chooses freely, and Slurm lets it hold a line break
# and "|": printed before Slurm's own fields it could forge them, or a whole line of another job (a job named
# "x\n123|alice|FAILED|..." would read as alice's).  So the hub's listings print no name at all (it follows its
# sessions' jobs by id, whatever their owners rename them to), and the one answer that needs it prints it last
# (JOB_FORMAT).  The reason goes last: it is the one free-text field (Slurm's state description), so a "|"
# inside it cannot shift the other fields.
SQUEUE_FORMAT = "%i|%u|%T|%N|%S|%e|%r"
SINFO_FIELDS = ("NodeList", "Partition", "StateCompact", "Gres", "GresUsed", "CPUsState", "AllocMem", "Memory")
# The extension helper's look at one job: the name last, read as everything after the fifth "|" (parse_job).
JOB_FORMAT = "%i|%u|%T|%l|%P|%j"
# Every user's jobs, for the jobs panel (one shared listing); no job name, every field is Slurm's own.
ALL_JOBS_FORMAT = "%i|%u|%T|%P|%D|%N|%M|%L|%l|%V|%S|%r"
# Slurm's accounting of finished jobs (sacct --parsable2); no JobName, for the same reason.
ACCOUNTING_FIELDS = tuple(
    "JobID User Partition State ExitCode Submit Start End Elapsed NNodes NodeList Timelimit".split()
)
JOB_ID = r"[0-9]+(?:[_+][0-9]+)?"  # 123, an array element 123_4, a hetjob component 82+1
# A job id in a URL's path, as a browser's encodeURIComponent writes it (82%2B1); tornado decodes what it captures
JOB_ID_IN_PATH = r"[0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?"
# What squeue and sacct list: a job id, or an array's tasks not yet started, in one line: 123_[5-999%4]
LISTED_ID = rf"{JOB_ID}|[0-9]+_\[[0-9,:%-]{{1,65536}}\]"  # steps too: 123_[0-99:2]
END_FORMAT = "%e"  # a job's end time

TIMESTAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"  # Slurm's '2026-11-22T11:00:00'
_TIMESTAMP = re.compile(TIMESTAMP)
_TEST_ONLY = re.compile(rf"Job [0-9]+ to start at ({TIMESTAMP})")
_LIMIT = re.compile(r"(?:([0-9]+)-)?([0-9]+)(?::([0-9]+))?(?::([0-9]+))?")
_MAX_TIME = re.compile(r"(?:^|\s)MaxTime=(\S+)")
ALL_PARTITIONS = "--all"  # squeue's and sinfo's: also those the caller may not use (AllowGroups, Hidden; jobs_argv)


# --- argument lists --------------------------------------------------------------------
def jobs_argv(squeue: str) -> list[str]:
    """Every job, in any state Slurm still remembers, in every partition: without --all, the hub's account saw no
    session of a partition it may not use and took each for gone (sessions are found by id, never by name)."""
    return [squeue, "--noheader", ALL_PARTITIONS, "--states=all", f"--format={SQUEUE_FORMAT}"]


def named_jobs_argv(squeue: str, job_name: str) -> list[str]:
    """The ids of every job of the portal's name (the reconciler's candidates; Slurm filters, no name is printed)."""
    return [squeue, "--noheader", ALL_PARTITIONS, "--states=all", f"--name={job_name}", "--format=%i"]


def all_jobs_argv(squeue: str) -> list[str]:
    """Every user's jobs in every state Slurm still lists (one call serves every user's jobs panel)."""
    return [squeue, "--noheader", ALL_PARTITIONS, "--states=all", f"--format={ALL_JOBS_FORMAT}"]


def accounting_argv(sacct: str, days: int) -> list[str]:
    """Every user's jobs of the last `days` days from Slurm's accounting, one line per job (no steps)."""
    return [
        sacct,
        "--allusers",
        "--allocations",
        "--noheader",
        "--parsable2",
        f"--starttime=now-{days}days",
        "--format=" + ",".join(ACCOUNTING_FIELDS),
    ]


def queue_order_argv(squeue: str, partition: str) -> list[str]:
    """The partition's pending jobs, in Slurm's priority order."""
    return [squeue, "--noheader", "--states=PENDING", f"--partition={partition}", "--sort=-p,i", "--format=%i"]


def end_time_argv(squeue: str, job_id: str) -> list[str]:
    return [squeue, "--noheader", f"--jobs={job_id}", f"--format={END_FORMAT}"]


def job_argv(squeue: str, job_id: str) -> list[str]:
    return [squeue, "--noheader", f"--jobs={job_id}", f"--format={JOB_FORMAT}"]


def user_jobs_argv(squeue: str, user: str) -> list[str]:
    return [squeue, "--noheader", ALL_PARTITIONS, "--format=%i", f"--user={user}"]


def sinfo_nodes_argv(sinfo: str) -> list[str]:
    return [sinfo, "--noheader", ALL_PARTITIONS, "--Node", "--Format=" + ",".join(f"{f}:|" for f in SINFO_FIELDS)]


def partitions_gres_argv(sinfo: str) -> list[str]:
    return [sinfo, "--noheader", ALL_PARTITIONS, "--format=%P|%G"]


def partition_argv(scontrol: str, partition: str) -> list[str]:
    return [scontrol, "--oneliner", "show", "partition", partition]


def time_limit_update_argv(scontrol: str, job_id: str, minutes: int) -> list[str]:
    return [scontrol, "update", f"JobId={job_id}", f"TimeLimit={minutes}"]


def estimate_argv(sbatch_argv: list[str]) -> list[str]:
    """A submission's argument list that queues nothing: Slurm only says when it would start (on stderr)."""
    return [*sbatch_argv, "--test-only"]


# --- time limits -----------------------------------------------------------------------
def time_limit(minutes: int) -> str:
    """Minutes -> Slurm's --time value: 'HH:MM:SS', or 'D-HH:MM:SS' from one day on."""
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:00"
    return f"{days}-{clock}" if days else clock


def parse_limit(text: str) -> int | None:
    """A Slurm time ('30', '8:00:00', '1-12:00:00', '2-00', 'UNLIMITED') -> whole minutes; None = no limit.

    Seconds round up: a limit is never reported shorter than it is."""
    text = text.strip()
    if text.upper() in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    match = _LIMIT.fullmatch(text)
    if not match:
        raise ValueError(f"not a Slurm time: {text!r}")
    days, first, second, third = match.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        hours, minutes, seconds = int(first), int(second or 0), int(third or 0)
    elif third is not None:  # HH:MM:SS
        hours, minutes, seconds = int(first), int(second), int(third)
    else:  # MM[:SS]
        hours, minutes, seconds = 0, int(first), int(second or 0)
    return (int(days or 0) * 24 + hours) * 60 + minutes + (1 if seconds else 0)


# --- records ---------------------------------------------------------------------------
@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str
    reason: str = ""
    node: str = ""
    user: str = ""
    start: str = ""  # Slurm's expected start of a pending job ('2026-11-22T11:00:00'), "" when it has none
    end: str = ""  # when a running job reaches its time limit (Slurm's end time); "" otherwise

    @property
    def pending(self) -> bool:
        return self.state in PENDING

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    @property
    def in_queue(self) -> bool:
        """Still known to Slurm as not finished (pending, running or ending)."""
        return self.state in PENDING | RUNNING | ENDING


@dataclass(frozen=True)
class NodeState:
    node: str
    partition: str
    state: str
    gpus: int
    gpus_used: int
    cpus_idle: int
    cpus: int
    memory_mib: int
    memory_used_mib: int
    gpu_types: tuple[tuple[str, int, int], ...] = ()  # (type, GPUs, in use) per GPU type ("": untyped)
    shards: int = 0  # shares of its GPUs (gres/shard), in all
    shards_used: int = 0
    gpus_held: tuple[int, ...] = ()  # the GPUs (indices on the node) jobs hold whole
    gpus_sharded: tuple[int, ...] = ()  # the GPUs jobs hold shards of: no whole GPU's any more until they end
    shards_free_per_gpu: tuple[int, ...] = ()  # each GPU's shards free, where sinfo says (Slurm 23.11 on)

    @property
    def usable(self) -> bool:  # a suffix (* not responding, ~ powered off, $ maintenance ...): no; "-" (planned): yes
        return self.state.rstrip("-") in USABLE_STATES


@dataclass(frozen=True)
class Job:
    """One job as the extension helper sees it (JOB_FORMAT)."""

    name: str
    user: str
    state: str
    limit: int | None
    partition: str


@dataclass(frozen=True)
class ListedJob:
    """One job of any user as squeue lists it (ALL_JOBS_FORMAT)."""

    job_id: str
    user: str
    state: str
    partition: str
    nodes: int
    node_list: str
    elapsed: str
    time_left: str
    limit: str
    submitted: str
    start: str  # the start, or Slurm's expected start while pending; "" when it has none
    reason: str

    @property
    def pending(self) -> bool:
        return self.state in PENDING

    @property
    def in_queue(self) -> bool:
        return self.state in PENDING | RUNNING | ENDING


@dataclass(frozen=True)
class AccountedJob:
    """One finished (or running) job from Slurm's accounting (ACCOUNTING_FIELDS)."""

    job_id: str
    user: str
    partition: str
    state: str  # "CANCELLED by 1001" is read as CANCELLED
    exit_code: str  # "1:0": the script's exit status and the signal that ended it
    submitted: str
    start: str
    end: str
    elapsed: str
    nodes: int
    node_list: str
    limit: str


# --- parsers ---------------------------------------------------------------------------
class UnreadableAnswer(ValueError):
    """squeue printed something that is not the asked-for format: nothing is concluded from it."""


def parse_job_id(output: str) -> str:
    """`sbatch --parsable` prints 'ID' or 'ID;cluster' (last line; warnings may precede)."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    job_id = lines[-1].split(";")[0].strip() if lines else ""
    if not job_id.isdigit():
        raise ValueError(f"sbatch printed no job id: {output.strip()[:200]!r}")
    return job_id


_SKIPPED: set[str] = set()


def _unreadable_once(line: str) -> None:
    key = "line:" + line[:60]
    if key not in _SKIPPED and len(_SKIPPED) < 10_000:
        _SKIPPED.add(key)
        log.warning("Skipping an unreadable line of Slurm's job listing: %r", line[:200])


def parse_squeue(output: str) -> dict[str, JobInfo]:
    """Lines of SQUEUE_FORMAT ('%i|%u|%T|%N|%S|%e|%r') -> {job_id: JobInfo}.

    A line of a plain job id that does not read raises UnreadableAnswer: a job
    missing from the result means "Slurm says it is gone", so none of the
    portal's jobs may go missing by accident.  No account can make such a line
    unreadable (every field is Slurm's own; no name is printed).  Any other
    line is skipped: array elements (123_4), heterogeneous job components
    (82+1), none of which is a session (sbatch gives a session a plain id).
    """
    jobs = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.strip().split("|", 6)
        if not parts[0].isdigit():  # not a session's job (a hetjob, an array task, a line of anything else)
            continue
        if len(parts) != 7 or not parts[2]:  # maybe one of the portal's: nothing may be concluded
            raise UnreadableAnswer(f"unreadable squeue line: {line[:200]!r}")
        job_id, user, state, node, start, end, reason = parts
        reason = "" if reason in ("None", "(null)") else reason
        node = "" if node in ("", "(null)", "n/a") else node
        state = state.split()[0]
        start = start if _TIMESTAMP.fullmatch(start) and state == "PENDING" else ""  # N/A, Unknown
        end = end if _TIMESTAMP.fullmatch(end) and state != "PENDING" else ""
        jobs[job_id] = JobInfo(job_id, state, reason, node, user, start, end)
    return jobs


def _timestamp(text: str) -> str:
    return text if _TIMESTAMP.fullmatch(text) else ""


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0


def parse_all_jobs(output: str) -> list[ListedJob]:
    """Lines of ALL_JOBS_FORMAT -> ListedJob, in Slurm's order.  A line that does not read is skipped
    (logged once): unlike the portal's own sessions, nothing is concluded from a job's absence here.
    A job id listed twice is dropped: no field can be forged, but nothing is guessed either."""
    jobs = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.strip().split("|")
        if len(parts) != 12 or not re.fullmatch(LISTED_ID, parts[0]) or not parts[2]:
            _unreadable_once(line)
            continue
        job_id, user, state, partition, nodes, node_list, elapsed, left, limit, submitted, start, reason = parts
        state = state.split()[0]
        jobs.append(
            ListedJob(
                job_id=job_id,
                user=user,
                state=state,
                partition=partition,
                nodes=_count(nodes),
                node_list="" if node_list in ("(null)", "n/a") else node_list,
                elapsed=elapsed,
                time_left="" if left in ("INVALID", "UNLIMITED", "NOT_SET") or state not in RUNNING else left,
                limit=limit,
                submitted=_timestamp(submitted),
                start=_timestamp(start),
                reason="" if reason in ("None", "(null)") else reason,
            )
        )
    return _once_each(jobs)


def _once_each(jobs: list) -> list:
    seen: dict[str, int] = {}
    for job in jobs:
        seen[job.job_id] = seen.get(job.job_id, 0) + 1
    return [job for job in jobs if seen[job.job_id] == 1]


def parse_accounting(output: str) -> list[AccountedJob]:
    """sacct --parsable2 lines of ACCOUNTING_FIELDS -> AccountedJob; unreadable lines are skipped (logged)."""
    jobs = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("|")
        if len(parts) != len(ACCOUNTING_FIELDS) or not re.fullmatch(LISTED_ID, parts[0]) or not parts[3]:
            _unreadable_once(line)
            continue
        job_id, user, partition, state, exit_code, submitted, start, end, elapsed, nodes, node_list, limit = parts
        jobs.append(
            AccountedJob(
                job_id=job_id,
                user=user,
                partition=partition,
                state=state.split()[0],
                exit_code=exit_code,
                submitted=_timestamp(submitted),
                start=_timestamp(start),
                end=_timestamp(end),
                elapsed=elapsed,
                nodes=_count(nodes),
                node_list="" if node_list in ("None assigned", "(null)") else node_list,
                limit=limit,
            )
        )
    return _once_each(jobs)


def parse_job_ids(output: str) -> set[str]:
    """named_jobs_argv's answer -> the plain job ids in it (array tasks and hetjob components are no sessions)."""
    return {line.strip() for line in output.splitlines() if line.strip().isdigit()}


def parse_queue_order(output: str) -> list[str]:
    """queue_order_argv's answer -> job ids, first in line first."""
    return [line.strip() for line in output.splitlines() if line.strip()]


def parse_sinfo(output: str) -> list[NodeState]:
    """Lines of sinfo_nodes_argv's SINFO_FIELDS -> one NodeState per node and partition."""
    nodes = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.rstrip().rstrip("|").split("|")]
        if len(parts) != len(SINFO_FIELDS):
            raise UnreadableAnswer(f"unreadable sinfo line: {line[:200]!r}")
        node, partition, state, gres, used, cpus, alloc_mem, memory = parts
        try:
            allocated, idle, _other, total = (int(n) for n in cpus.split("/"))
            nodes.append(
                NodeState(
                    node=node,
                    partition=partition.rstrip("*"),
                    state=state,
                    cpus_idle=idle,
                    cpus=total,
                    memory_mib=int(memory),
                    memory_used_mib=int(alloc_mem),
                    **gres_facts(gres, used),
                )
            )
        except ValueError:
            raise UnreadableAnswer(f"unreadable sinfo line: {line[:200]!r}") from None
    return nodes


def parse_partitions_gres(output: str) -> dict[str, str]:
    """partitions_gres_argv's answer -> {partition: its nodes' GRES} (the default partition's * removed)."""
    gres: dict[str, str] = {}
    for line in output.splitlines():
        name, _, resources = line.partition("|")
        key = name.rstrip("*")  # nodes of several GRES: one line each, joined as one node's list
        gres[key] = f"{gres[key]},{resources}" if key in gres else resources
    return gres


def parse_test_only(stderr: str) -> str | None:
    """`sbatch --test-only` -> Slurm's expected start ('2026-11-22T11:00:00'), None if it gave none."""
    found = _TEST_ONLY.search(stderr)
    return found.group(1) if found else None


def parse_end(output: str) -> datetime | None:
    """squeue's '%e' for one job -> its end time; None for 'N/A', 'NONE', 'Unknown' or nothing."""
    text = output.strip()
    if not _TIMESTAMP.fullmatch(text):
        return None
    return datetime.fromisoformat(text)


def parse_job(output: str, job_id: str) -> Job | None:
    """job_argv's answer (JOB_FORMAT, '%i|%u|%T|%l|%P|%j') for job `job_id` -> Job; None when Slurm does not list it.

    The name is the job owner's choice and may hold line breaks and "|": it is
    everything after the fifth "|" up to the answer's last line break, so it
    shifts none of the fields before it, which are Slurm's own.  The answer
    must be one plain job of the id asked (an array task prints as 12_3, a
    hetjob component as 12+0); anything else is unreadable, never guessed.
    """
    if not output.strip():
        return None
    fields = output.removesuffix("\n").split("|", 5)
    if (
        len(fields) != 6
        or fields[0] != job_id
        or not all(fields[1:5])
        or any(not f.isprintable() for f in fields[:5])  # no line break: one line of Slurm's fields, one job
    ):
        raise ValueError(f"unreadable squeue answer for job {job_id}: {output[:200]!r}")
    _, user, state, limit, partition, name = fields
    return Job(name, user, state, parse_limit(limit), partition)


def parse_partition_max(output: str) -> int | None:
    """`scontrol --oneliner show partition P` -> its MaxTime in minutes; None = unlimited."""
    match = _MAX_TIME.search(output)
    if not match:
        raise ValueError("scontrol printed no MaxTime")
    return parse_limit(match.group(1))

"""What one user's session jobs hold in Slurm itself: the admin's limits count jobs the hub does not track.

An sbatch that timed out (slurmctld stopped or too slow to answer) may still
have queued its job, and a hub killed while an sbatch ran never learns the id
of the job it asked for.  Until the reconciler cancels such a job (two of its
passes), Slurm holds it for the user: the limits of a start count it
(spawner/hub/session/limits.py), so a user never holds more than the admin
allows, not even for the seconds a fault leaves behind (the soak saw a user
hold 4 sessions with a limit of 3 for 6 s after slurmctld came back).

Each start tags its job with a comment of its own (`start_comment`), so that a
start still waiting for its sbatch's answer is not counted twice: once as the
start, once as its job.  The comment is the one field here its owner can
change (`scontrol update Comment=`), so it is printed last and a job id seen
twice (a comment with a line break forging a line) makes the answer
unreadable: what the owner writes there can only add to their own count, or
refuse their own start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...slurmgres import gpus_held
from ...slurmvocab import ALL_PARTITIONS, PENDING, RUNNING, UnreadableAnswer

HELD_FORMAT = "%i|%T|%b|%k"  # job id, state, the GRES it asks for per node (a session has one node), comment
COMMENT_PREFIX = "dsportal-start:"
# 'gpu:2', 'gres:gpu:2', 'gres/gpu:a100:2', 'gpu:v100:4(S:0-1)' -> 2, 2, 2, 4
_JOB_ID = re.compile(r"[0-9]+")  # ASCII digits: str.isdigit() takes "²", which int() does not
_GPUS = re.compile(r"(?:^|[,:/])gpu(?::[^:,(]+)?:([0-9]+)")
_SHARDS = re.compile(r"(?:^|[,:/])shard(?::[^:,(]+)?:([0-9]+)")  # 'gres:shard:2', 'gres/shard:a100:1'


@dataclass(frozen=True)
class HeldJob:
    """A job of the portal's name that Slurm holds or queues for the user."""

    gpus: int
    comment: str = ""
    shards: int = 0  # shares of a GPU (gres/shard)

    def gpu_share(self, shards_per_gpu: int) -> float:
        """The GPUs it holds, a share as its fraction of a GPU (`shards_per_gpu`: the admin's slurm.shards.per_gpu;
        a whole GPU where that says no fraction, as the GPU cap counts a share: slurmgres.gpu_fraction)."""
        return gpus_held(self.gpus, self.shards, shards_per_gpu)


def start_comment(tag: str) -> str:
    """The comment a start gives its job (sbatch --comment)."""
    return f"{COMMENT_PREFIX}{tag}"


def held_jobs_argv(squeue: str, job_name: str, user: str) -> list[str]:
    """The user's jobs of the portal's name in every state Slurm lists (the parser keeps those that hold)."""
    argv = [squeue, "--noheader", ALL_PARTITIONS, "--states=all", f"--name={job_name}", f"--user={user}"]
    return [*argv, f"--format={HELD_FORMAT}"]


def gpus_of(gres: str) -> int:
    """squeue's %b ('gres:gpu:2', 'N/A', '(null)') -> the GPUs per node it asks for; unreadable if it names GPUs
    in a way this does not know."""
    found = _GPUS.findall(gres.strip())
    if not found and "gpu" in gres:
        raise UnreadableAnswer(f"unreadable GRES in squeue's answer: {gres[:100]!r}")
    return sum(int(n) for n in found)


def shards_of(gres: str) -> int:
    """squeue's %b -> the shares of a GPU per node it asks for ('gres:shard:2' -> 2; none -> 0)."""
    return sum(int(n) for n in _SHARDS.findall(gres.strip()))


def parse_held_jobs(output: str) -> dict[str, HeldJob]:
    """held_jobs_argv's answer -> {job id: HeldJob} of the plain job ids pending or running (array tasks and
    hetjob parts are no sessions; ending and ended jobs hold nothing more)."""
    held: dict[str, HeldJob] = {}
    seen: set[str] = set()
    for line in output.splitlines():
        parts = line.strip().split("|", 3)
        if not _JOB_ID.fullmatch(parts[0]):
            continue
        if len(parts) != 4 or parts[0] in seen:  # a comment with a line break forging a line
            raise UnreadableAnswer(f"unreadable squeue line: {line[:200]!r}")
        job_id, state, gres, comment = parts
        seen.add(job_id)
        if (state.split() or [""])[0] in PENDING | RUNNING:
            held[job_id] = HeldJob(gpus_of(gres), comment, shards_of(gres))
    return held

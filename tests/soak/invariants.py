"""The promises a soak checks, as pure functions of what it recorded (tests/soak/model.py) -> violations.

over_limits     no user above sessions.max_per_user / max_gpus_per_user in any sample of Slurm's queue
orphans         no job of the soak's users in Slurm without an owner in the hub for longer than a grace
live_tokens     no token of an ended session or a revoked share that still works
lost_history    every ended session in its user's history (unless newer sessions pushed it out)
wordless        every refusal (4xx) says why in words
unexplained     no 5xx and no unanswered request outside an injected fault's window
leftovers       the dev cluster whole at the end: daemons up, no session running, no job left
slow_requests   no other user's request the hub answers from what it holds waits more than 1 s outside a fault
hub_memory      the hub's memory ends within 200 MiB of where it began (a restarted hub: of where it began again)
forged_records  no line of the hub's log begins with the hostile user's forged record
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

from .model import Attack, Call, Ended, FaultWindow, HubMemory, Probe, Sample, Snapshot, Violation


def clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _ids(job_ids: Iterable[str]) -> str:
    return ", ".join(sorted(job_ids, key=lambda j: (len(j), j)))


def _owners(jobs: list, hub) -> str:
    """Each job's state and the hub's session for it at that sample (what tells one over-limit cause from another)."""
    if hub is None:
        return "the hub did not answer"
    sessions = {s.job_id: s for s in hub.servers if s.job_id}

    def owner(job) -> str:
        s = sessions.get(job.job_id)
        if s is None:
            return "no session"
        return f"session {s.server!r}" + (", stopping" if s.stopping else "")

    return ", ".join(
        f"{j.job_id} {j.state} ({owner(j)})" for j in sorted(jobs, key=lambda j: (len(j.job_id), j.job_id))
    )


def over_limits(samples: list[Sample], job_name: str, max_per_user: int, max_gpus: int) -> list[Violation]:
    """Sessions (jobs named `job_name`) one user held or waited for at once above the admin's limits; one
    violation per user and set of jobs, however many samples saw it (max_gpus 0: no GPU limit), with each job's
    state and owner in the hub at the first sample that saw it."""
    seen: dict[tuple[str, tuple[str, ...]], list] = {}
    for sample in samples:
        held = defaultdict(list)
        for job in sample.holding:
            if job.name == job_name:
                held[job.user].append(job)
        for user, jobs in held.items():
            gpus = sum(j.gpus for j in jobs)
            if len(jobs) > max_per_user or (max_gpus and gpus > max_gpus):
                key = (user, tuple(sorted(j.job_id for j in jobs)))
                seen.setdefault(key, [sample.at, sample.at, 0, gpus, _owners(jobs, sample.hub)])
                seen[key][1] = sample.at
                seen[key][2] += 1
    return [
        Violation(
            "over limit",
            f"{user} held {len(jobs)} sessions with {gpus} GPUs at once (jobs {_ids(jobs)}; the limits are "
            f"{max_per_user} sessions and {max_gpus or 'any'} GPUs) from {clock(first)} "
            f"({count} sample{'s' if count != 1 else ''} over {last - first:.0f} s; first seen: {owners})",
        )
        for (user, jobs), (first, last, count, gpus, owners) in seen.items()
    ]


def orphans(samples: list[Sample], grace: float) -> list[Violation]:
    """Jobs Slurm held for the soak's users while the hub, answering, owned none of them, for `grace` seconds or
    more in a row (the reconciler cancels an unowned session job at its second pass; a start's job exists in
    Slurm a moment before the hub saves its id).  Samples without the hub's or Slurm's answer neither start nor
    end a run."""
    since: dict[str, float] = {}
    found: dict[str, tuple[float, float, str, str]] = {}
    for sample in samples:
        if sample.hub is None or sample.jobs is None:
            continue
        holding = {j.job_id: j for j in sample.holding}
        owned = sample.hub.owned
        for job_id in list(since):
            if job_id not in holding or job_id in owned:
                del since[job_id]
        for job_id, job in holding.items():
            if job_id in owned:
                continue
            start = since.setdefault(job_id, sample.at)
            if sample.at - start >= grace:
                found[job_id] = (start, sample.at, job.user, job.name)
    return [
        Violation(
            "orphan",
            f"job {job_id} ({name}) of {user} ran in Slurm with no owner in the hub from {clock(first)} for {last - first:.0f} s",
        )
        for job_id, (first, last, user, name) in found.items()
    ]


def ended_sessions(samples: list[Sample]) -> list[Ended]:
    """The sessions that ended, from the hub's successive views: a session's job the hub held (not handed to the
    reconciler) and then no longer did, at the first view without it."""
    holding: dict[tuple[str, str], str] = {}
    ended = []
    for sample in samples:
        if sample.hub is None:
            continue
        now = {(s.user, s.server): s.job_id for s in sample.hub.servers if s.running}
        for key, job_id in holding.items():
            if now.get(key) != job_id:
                ended.append(Ended(key[0], key[1], job_id, sample.at))
        holding = now
    return ended


def live_tokens(probes: list[Probe]) -> list[Violation]:
    return [
        Violation(
            "live token",
            f"the token of {p.user}'s session {p.server} (job {p.job_id}) still worked "
            f"{p.at - p.after:.0f} s after its {'share was revoked' if p.why == 'revoked share' else 'session ended'} "
            f"(GET /hub/api/user answered 200 at {clock(p.at)})",
        )
        for p in probes
        if p.status == 200
    ]


def lost_history(
    ended: list[Ended], snapshots: list[Snapshot], keep: int, settle: float = 5.0, slack: float = 60.0
) -> list[Violation]:
    """Ended sessions their user's history never showed.  The history keeps the newest `keep` sessions: one
    missing is excused only when the first history read `settle` s after its end (else the last read) was full
    of sessions that ended no earlier than it, give or take `slack` s (the hub writes ends to the minute)."""
    by_user: dict[str, list[Snapshot]] = defaultdict(list)
    for s in sorted(snapshots, key=lambda s: s.at):
        by_user[s.user].append(s)
    end_of = {e.job_id: e.at for e in ended}
    found = []
    for e in ended:
        reads = by_user.get(e.user, [])
        if any(e.job_id == job_id for s in reads for job_id, _ in s.entries):
            continue
        after = [s for s in reads if s.at >= e.at + settle] or [s for s in reads if s.at >= e.at]
        if not after:
            found.append(
                Violation(
                    "lost history",
                    f"{e.user}'s history was not read after session {e.server} (job {e.job_id}) ended at {clock(e.at)}",
                )
            )
            continue
        read = after[0]
        ends = [
            end_of.get(job_id, hub_end + 60 if hub_end is not None else float("-inf"))
            for job_id, hub_end in read.entries
        ]
        if len(ends) >= keep and all(end >= e.at - slack for end in ends):
            continue  # pushed out by newer sessions
        found.append(
            Violation(
                "lost history",
                f"{e.user}'s session {e.server} (job {e.job_id}) ended at {clock(e.at)} but their history at "
                f"{clock(read.at)} does not list it (it lists jobs {_ids(j for j, _ in read.entries) or 'none'})",
            )
        )
    return found


def wordless(calls: list[Call]) -> list[Violation]:
    return [
        Violation(
            "no words",
            f"{c.op} by {c.user} at {clock(c.started)}: {c.method} {c.path} answered {c.status} without a message",
        )
        for c in calls
        if 400 <= c.status < 500 and not c.message
    ]


def in_window(call: Call, faults: list[FaultWindow], grace: float) -> bool:
    return any(call.started <= f.restored + grace and call.ended >= f.started for f in faults)


def unexplained(calls: list[Call], faults: list[FaultWindow], grace: float) -> list[Violation]:
    """5xx answers and requests without an answer that no injected fault explains: none overlapped the request,
    from its start until `grace` s after its daemon answered again."""
    return [
        Violation(
            "failure",
            f"{c.op} by {c.user} at {clock(c.started)}: {c.method} {c.path} "
            + (
                f"answered {c.status}" + (f" ({c.message})" if c.message else "")
                if c.status
                else f"got no answer ({c.error})"
            )
            + " outside any fault",
        )
        for c in calls
        if (c.status == 0 or c.status >= 500) and not in_window(c, faults, grace)
    ]


def restarts_by_others(
    pids: list[tuple[float, dict[str, int | None]]], injected: list[FaultWindow]
) -> list[FaultWindow]:
    """Daemons whose pid changed (or that were down) between two readings with no injected fault of theirs
    overlapping: someone else restarted them (another test on the shared dev cluster, an `up` after a change).
    Each becomes a window from the reading before to the reading after."""
    found = []
    for (before, old), (after, new) in zip(pids, pids[1:], strict=False):
        for program, pid in new.items():
            if pid == old.get(program, pid) and pid is not None:
                continue
            if any(f.target == program and f.started <= after and f.restored >= before for f in injected):
                continue
            last = next((w for w in reversed(found) if w.target == program), None)
            if last is not None and last.restored == before:  # still down: the same restart
                found[found.index(last)] = FaultWindow(last.kind, program, last.started, after)
            else:
                found.append(FaultWindow(f"{program} restarted by someone else", program, before, after))
    return found


def leftovers(final: Sample, down: list[str], restore_problems: list[str]) -> list[Violation]:
    """What the soak left behind: daemons down, sessions the hub still runs, jobs Slurm still holds."""
    found = [Violation("not whole", f"{name} is not running after the soak") for name in down]
    found += [Violation("not whole", problem) for problem in restore_problems]
    if final.hub is None:
        found.append(Violation("not whole", "the hub did not answer after the soak"))
    else:
        found += [
            Violation(
                "not whole",
                f"{s.user}'s session {s.server} (job {s.job_id}) still runs after the soak stopped every session",
            )
            for s in final.hub.servers
            if s.running
        ]
    if final.jobs is None:
        found.append(Violation("not whole", "slurmctld did not answer after the soak"))
    found += [
        Violation("not whole", f"job {j.job_id} ({j.name}) of {j.user} is still {j.state} in Slurm after the soak")
        for j in final.holding
    ]
    return found


# --- the hostile user's promises (tests/soak/hostile.py) ------------------------------------------------------------


def waits(
    calls: list[Call], faults: list[FaultWindow], grace: float, ops: frozenset[str]
) -> tuple[list[Call], list[Call]]:
    """The requests of `ops` (those the hub answers from what it holds), split into (outside every fault's window,
    within one): a window runs from the fault's start until `grace` s after its daemon answered again."""
    timed = [c for c in calls if c.op in ops]
    inside = [c for c in timed if in_window(c, faults, grace)]
    return [c for c in timed if not in_window(c, faults, grace)], inside


def slow_requests(
    calls: list[Call], faults: list[FaultWindow], grace: float, ops: frozenset[str], bound: float
) -> list[Violation]:
    """Requests of `ops` that waited more than `bound` s for their answer outside every fault's window."""
    outside, _ = waits(calls, faults, grace, ops)
    return [
        Violation(
            "slow",
            f"{c.op} by {c.user} at {clock(c.started)}: {c.method} {c.path} waited {c.ended - c.started:.2f} s "
            f"(at most {bound:g} s outside a fault)",
        )
        for c in outside
        if c.ended - c.started > bound
    ]


def memory_baseline(readings: list[HubMemory], faults: list[FaultWindow]) -> HubMemory | None:
    """What the hub's memory at the end (the last reading) is compared with: the first reading of the process that
    ran at the end, outside any fault's window if it has one.  A hub restarted meanwhile is a new process: its
    baseline is its own first reading once it answered, not the old hub's."""
    if not readings:
        return None
    mine = [r for r in readings if r.pid == readings[-1].pid]
    settled = [r for r in mine if not any(f.started <= r.at <= f.restored for f in faults)]
    return (settled or mine)[0]


def mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


def hub_memory(readings: list[HubMemory], faults: list[FaultWindow], slack: int) -> list[Violation]:
    """The hub's memory at the end more than `slack` bytes above its baseline (memory_baseline)."""
    base = memory_baseline(readings, faults)
    if base is None:
        return [Violation("memory", "the hub's memory was never read (no process listened on its API port)")]
    end = readings[-1]
    if end.rss - base.rss <= slack:
        return []
    return [
        Violation(
            "memory",
            f"the hub's memory went {mib(base.rss)} at {clock(base.at)} -> {mib(end.rss)} at {clock(end.at)} "
            f"(pid {end.pid}): more than {mib(slack)} above where it began",
        )
    ]


def forged_records(log: str, forged: str, sent: int) -> list[Violation]:
    """Lines of the hub's log, as a terminal or str.splitlines breaks them (\\r, \\n, U+2028 ...), that begin with
    the hostile user's `forged` record (indented too, as the hub's formatter indents a record's further lines);
    and, the check being blind otherwise, none when its `sent` requests' words never reached the log escaped."""
    lines = log.splitlines()
    found = [
        Violation("forged log line", f"the hub's log holds a line that begins with the hostile user's record: {line!r}")
        for line in lines
        if line.lstrip().startswith(forged)
    ]
    if sent and not any("\\r" + forged in line for line in lines):
        found.append(
            Violation("forged log line", f"the hostile user's words ({sent} requests) never reached the hub's log")
        )
    return found


def wordless_attacks(attacks: list[Attack]) -> list[Violation]:
    return [
        Violation("no words", f"the hostile user's {a.kind} at {clock(a.started)}: {a.wordless} refusals without words")
        for a in attacks
        if a.wordless
    ]

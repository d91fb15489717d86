"""The soak's report: what it did, what it broke on purpose, what it watched, and each promise broken (pure)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .invariants import clock, mib
from .model import Attack, Call, FaultWindow, HubMemory, Violation


@dataclass
class Report:
    users: int
    seconds: float
    seed: int
    calls: list[Call]
    faults: list[FaultWindow]
    watched: dict[str, int] = field(default_factory=dict)  # what the checks read: samples, sessions ended ...
    violations: list[Violation] = field(default_factory=list)
    others: list[FaultWindow] = field(default_factory=list)  # daemons restarted meanwhile by someone else
    hostile: str = ""  # the user who attacked, "" when none did
    attacks: list[Attack] = field(default_factory=list)
    waits: tuple[list[Call], list[Call]] = ([], [])  # the requests the hub answers itself: (outside faults, within)
    # the hub's: (first reading, the baseline the end is judged against: a restarted hub's own, the end)
    memory: tuple[HubMemory | None, HubMemory | None, HubMemory | None] = (None, None, None)


def outcome(call: Call) -> str:
    if call.status == 0 or call.status >= 500:
        return "failed"
    if call.status >= 400:
        return "refused" if call.message else "wordless"
    return "accepted"


def duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def attack_lines(hostile: str, attacks: list[Attack]) -> list[str]:
    lines = [f"Hostile user {hostile} (rounds: requests, each status how many times, seconds):"]
    for kind in ("reads", "forge", "offers"):
        done = [a for a in attacks if a.kind == kind]
        statuses: Counter = Counter()
        for attack in done:
            statuses.update(dict(attack.statuses))
        answered = ", ".join(f"{status or 'no answer'} x{n}" for status, n in sorted(statuses.items()))
        took = sum(a.ended - a.started for a in done if not a.error)
        lines.append(
            f"  {kind:<8} {len(done)}: {sum(statuses.values())} requests ({answered or 'none'}) in {took:.0f} s"
        )
    lines += [f"  (!) {a.kind} at {clock(a.started)}: {a.error}" for a in attacks if a.error]
    return lines


def hostility(report: Report) -> list[str]:
    """The hostile user's rounds, the others' longest waits and the hub's memory (the numbers its promises judge)."""
    lines = attack_lines(report.hostile, report.attacks) if report.hostile else []
    outside, inside = report.waits
    if outside or inside:

        def longest(calls: list[Call]) -> str:
            worst = max(calls, key=lambda c: c.ended - c.started, default=None)
            return f"{worst.ended - worst.started:.2f} s ({worst.op} at {clock(worst.started)})" if worst else "none"

        ops = ", ".join(sorted({c.op for c in outside + inside}))
        lines.append(
            f"Other users' waits on the hub ({ops}; {len(outside) + len(inside)} requests): longest outside "
            f"faults {longest(outside)}, within them {longest(inside)}"
        )
    first, base, end = report.memory
    if first is not None and base is not None and end is not None:
        again = (
            f", {mib(base.rss)} when the restarted hub (pid {base.pid}) began at {clock(base.at)}"
            if base.pid != first.pid
            else ""
        )
        lines.append(
            f"Hub memory: {mib(first.rss)} at {clock(first.at)} (pid {first.pid}){again}; {mib(end.rss)} at the "
            f"end, {clock(end.at)} (pid {end.pid})"
        )
    return lines


def render(report: Report) -> str:
    lines = [
        f"Soak of {report.users} users for {duration(report.seconds)} (seed {report.seed}): "
        f"{len(report.calls)} operations, {len(report.faults)} faults, {len(report.violations)} violations",
        "Operations: accepted / refused with words / refused without words / failed (5xx or no answer)",
    ]
    by_op: dict[str, Counter] = defaultdict(Counter)
    for call in report.calls:
        by_op[call.op][outcome(call)] += 1
    for op in sorted(by_op, key=lambda o: -sum(by_op[o].values())):
        c = by_op[op]
        lines.append(
            f"  {op:<8} {sum(c.values()):>5}   {c['accepted']} / {c['refused']} / {c['wordless']} / {c['failed']}"
        )
    lines.append("Faults (seconds until the daemon answered again):" if report.faults else "Faults: none")
    by_kind: dict[str, list[FaultWindow]] = defaultdict(list)
    for fault in report.faults:
        by_kind[fault.kind].append(fault)
    for kind, faults in sorted(by_kind.items()):
        took = ", ".join(f"{f.restored - f.started:.0f}" + (" (!)" if f.problem else "") for f in faults)
        lines.append(f"  {kind:<18} {len(faults)}   {took}")
    for fault in report.faults:
        if fault.problem:
            lines.append(f"  (!) {fault.kind}: {fault.problem}")
    if report.others:
        lines.append(
            "Restarted by someone else meanwhile (their failures excused too): "
            + ", ".join(f"{w.target} at {clock(w.restored)}" for w in report.others)
        )
    lines += hostility(report)
    if report.watched:
        lines.append("Watched: " + ", ".join(f"{n} {what}" for what, n in report.watched.items()))
    if not report.violations:
        lines.append("Violations: none")
        return "\n".join(lines)
    kinds = Counter(v.kind for v in report.violations)
    lines.append(
        f"Violations: {len(report.violations)} (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")"
    )
    lines += [f"  - {v.kind}: {v.text}" for v in report.violations]
    return "\n".join(lines)

"""The soak's report: what it did, what it broke on purpose, what it watched, and each promise broken (pure)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .invariants import clock
from .model import Call, FaultWindow, Violation


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


def outcome(call: Call) -> str:
    if call.status == 0 or call.status >= 500:
        return "failed"
    if call.status >= 400:
        return "refused" if call.message else "wordless"
    return "accepted"


def duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


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

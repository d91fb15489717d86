"""A user's several sessions: their names and the admin's limits across them (hub side, pure).

Each session is a JupyterHub server of its own (the unnamed one, or a named
one: `c.JupyterHub.allow_named_servers`), so each is its own Slurm job with
its own partition, GPUs and hours.  What one user may hold at once is the
admin's (sessions.max_per_user, sessions.max_gpus_per_user); a start past it is
refused with words before anything is submitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# JupyterHub 6's rule for new server names (jupyterhub.slugs.is_valid_safe_slug), stated for users
NAME = re.compile(r"[a-z](?:[a-z0-9-]{0,28}[a-z0-9])?\Z")
NAME_PATTERN = NAME.pattern.removesuffix(r"\Z")  # for the home page's input (HTML pattern)
NAME_RULE = (
    "1 to 30 lowercase letters, digits and single hyphens, starting with a letter and ending with a letter "
    "or digit, e.g. training-2"
)


def name_problem(name: str) -> str:
    """Why `name` cannot name a session ("" when it can)."""
    if NAME.match(name) and "--" not in name:
        return ""
    shown = name if len(name) <= 40 and name.isprintable() else repr(name[:40]) + "..."
    return f"A session cannot be called {shown!r}: use {NAME_RULE}."


@dataclass(frozen=True)
class Held:
    """What the user holds (or waits for) beside a new start: one of their sessions, or a run or sweep of theirs
    (spawner/hub/runs/limits.py): sessions.max_gpus_per_user counts all of them, max_per_user the sessions."""

    name: str  # "" for the unnamed session; a run's or sweep's job id
    gpus: float  # a share of a GPU (Slurm's gres/shard) as its fraction
    untracked_job: str = ""  # a job of the portal's name that Slurm holds for the user and no session owns
    kind: str = "session"  # or "run", "sweep"


def label(name: str) -> str:
    """How the pages name a session."""
    return f"session {name!r}" if name else "your unnamed session"


def untracked_jobs(
    in_slurm: dict, tracked: set[str], in_flight: list[tuple[str, int, int]], shards_per_gpu: int = 0
) -> list[Held]:
    """The jobs Slurm holds for the user ({job id: HeldJob}) that none of the user's sessions owns (`tracked`: their
    job ids), as held resources, oldest first; but a start still waiting for its sbatch (`in_flight`: its job's
    comment, GPUs and shards) is held already, so one job carrying its comment, GPUs and shards is its own and not counted
    twice (a comment alone can be copied onto a bigger leftover).  A job on shares of a GPU holds their fraction
    of a GPU (`shards_per_gpu`)."""
    untracked = sorted(((j, h) for j, h in in_slurm.items() if j not in tracked), key=lambda item: int(item[0]))
    for comment, gpus, shards in in_flight:
        mine = next(
            (i for i in reversed(untracked) if (i[1].comment, i[1].gpus, i[1].shards) == (comment, gpus, shards)),
            None,
        )
        if mine is not None:
            untracked.remove(mine)
    return [Held("", held.gpu_share(shards_per_gpu), untracked_job=job_id) for job_id, held in untracked]


def held_label(held: Held) -> str:
    """How a refusal names what the user holds."""
    if held.kind != "session":
        return f"{held.kind} {held.name}"
    if held.untracked_job:
        return f"job {held.untracked_job}"
    return label(held.name)


def room_problem(held: list[Held], gpus: float, max_per_user: int, max_gpus: int) -> str:
    """Why one more session of `gpus` GPUs is refused beside `held` ("" when it fits the admin's limits)."""
    sessions = [h for h in held if h.kind == "session"]
    if len(sessions) >= max_per_user:
        names = ", ".join(held_label(h) for h in sessions)
        return (
            f"You already run {len(sessions)} session{'s' if len(sessions) != 1 else ''} ({names}), the most one "
            f"user may run at once here ({max_per_user}). Stop one of them from the home page, then start this one."
            + _untracked_note(sessions)
        )
    return gpu_problem(held, gpus, max_gpus, "this session")


def _counted(items: list[Held], kind: str) -> str:
    n = sum(1 for h in items if h.kind == kind)
    return f"{n} {kind}{'s' if n != 1 else ''}" if n else ""


def gpu_problem(held: list[Held], gpus: float, max_gpus: int, asking: str, asked: str = "") -> str:
    """Why `asking` ("this session", "this run", "this sweep") of `gpus` GPUs passes sessions.max_gpus_per_user
    beside what the user's sessions, runs and sweeps hold ("" when it fits, asks for no GPU, or max_gpus is 0);
    `asked` says how a sweep's GPUs are counted."""
    taken = sum(h.gpus for h in held)
    if not max_gpus or not gpus or taken + gpus <= max_gpus + 1e-9:  # thirds of a GPU add up in floats
        return ""
    holding = [h for h in held if h.gpus]
    kinds = [w for w in (_counted(holding, k) for k in ("session", "run", "sweep")) if w]
    where = " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
    names = ", ".join(f"{held_label(h)}: {h.gpus:g}" for h in holding)
    now = f"You hold {taken:g} GPU{'s' if taken != 1 else ''} in {where} ({names})" if holding else "You hold no GPU"
    return (
        f"{now}, and sessions.max_gpus_per_user is {max_gpus} here: "
        f"it counts the GPUs of your sessions, runs and sweeps together (a sweep's: those of the tasks it may "
        f"run at once). {asking.capitalize()} asks for {gpus:g}{asked}, so it may ask for at most "
        f"{max(0, max_gpus - taken):g}. Ask for fewer GPUs{' or fewer runs at once' if asked else ''}, or stop a "
        "session or cancel a run or sweep first." + _untracked_note(held)
    )


def _untracked_note(held: list[Held]) -> str:
    jobs = [h.untracked_job for h in held if h.untracked_job]
    if not jobs:
        return ""
    return (
        f" Slurm still holds {', '.join(f'job {j}' for j in jobs)} of a start that failed (the scheduler answered "
        "too late); the hub cancels it at its next two checks for such jobs."
    )


def user_sessions(user) -> list:
    """Every session spawner of a JupyterHub `user`, running or not (JupyterHub keeps in memory only those it has
    been asked for): the unnamed one first, then the named ones by name."""
    orm_user = getattr(user, "orm_user", None)
    names = sorted(orm_user.orm_spawners) if orm_user is not None else []
    found = []
    for name in ["", *(n for n in names if n)]:
        try:
            found.append(user.spawners[name])  # JupyterHub's dict makes the spawner of a saved session
        except KeyError:  # a plain dict (the spawner's own tests): only the spawners it holds
            continue
    seen = {id(s) for s in found}
    found += [s for s in list(user.spawners.values()) if id(s) not in seen]  # not in the database (unit tests)
    return [s for s in found if hasattr(s, "record")]

"""A user's record: what the hub keeps of a user across their sessions (hub side).

Each concept keeps its slice of it: the sessions' history (session/stop.py writes it, the home page reads it),
the usage log (session/stop.py, usage/accounting.py and the usage page), the runs (runs/service.py and
runs/tracker.py) and the e-mail opt-in (runs/handlers.py).  One row per user in the hub's database, beside
JupyterHub's tables (`dsportal_user_records`, made by JupyterHub with its own at its start) and removed with the
user (its foreign key); a user's sessions keep only what is theirs (spawner/hub/session/record.py).

Before 0.2.0 the record of a user's unnamed session held these too; `user_record` moves them over, in one
commit, the first time it is asked for a user's record (spawner/hub/session/record.py keeps them unread in that
session's record until then).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from jupyterhub import orm
from sqlalchemy import Column, ForeignKey, Integer
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.exc import SQLAlchemyError

from ..base.upstream_jupyterhub import TableBase
from .record import LEGACY_USER_KEYS as USER_KEYS
from .record import typed_fields

log = logging.getLogger("JupyterHub").getChild("userrecord")

VERSION = 1


class UserRecordRow(TableBase):
    """A user's record as the hub's database holds it."""

    __tablename__ = "dsportal_user_records"
    user_id = Column(Integer, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    state = Column(orm.JSONDict, nullable=False, default=dict)


@dataclass
class UserRecord:
    """What is the user's, not one session's."""

    history: list[dict] = field(default_factory=list)  # the last sessions, newest first (session/record.py's)
    usage_log: list[dict] = field(default_factory=list)  # what each of the last sessions used (session/usagelog.py)
    runs: list[dict] = field(default_factory=list)  # notebooks and scripts run as jobs, newest first
    notify_mail: bool = False  # opted in to e-mail (a job ended, a queued session started, time runs out)
    # session name -> the job whose carried variables its next start loads: a continuation whose new job did not
    # start (spawner/hub/continuation/service.py)
    continuations: dict = field(default_factory=dict)
    # session name -> True: continue it in a new job automatically before its time limit (spawner/hub/continuation/)
    auto_continue: dict = field(default_factory=dict)

    def to_state(self) -> dict:
        state: dict[str, Any] = {"version": VERSION}
        for name in ("history", "usage_log", "runs"):
            if getattr(self, name):
                state[name] = [dict(e) for e in getattr(self, name)]
        if self.notify_mail:
            state["notify_mail"] = True
        if self.continuations:
            state["continuations"] = dict(self.continuations)
        if self.auto_continue:
            state["auto_continue"] = dict(self.auto_continue)
        return state

    @classmethod
    def from_state(cls, state: dict | None) -> UserRecord:
        """A saved state -> the record; what does not read is logged and left at its default, never raised."""
        state = dict(state or {})
        state.pop("version", None)
        values = typed_fields(cls, state, "user record")
        values["history"] = [e for e in values.get("history", []) if isinstance(e, dict)]
        for name in ("usage_log", "runs"):
            values[name] = [e for e in values.get(name, []) if isinstance(e, dict) and isinstance(e.get("job_id"), str)]
        values["auto_continue"] = {
            k: True for k, v in values.get("auto_continue", {}).items() if isinstance(k, str) and v is True
        }
        values["continuations"] = {
            k: v
            for k, v in values.get("continuations", {}).items()
            if isinstance(k, str) and isinstance(v, str) and v.isdigit()
        }
        return cls(**values)


def _key(user) -> tuple:
    """The cache's key of a JupyterHub user: its row, and when it was made (SQLite gives a user made after one
    was deleted the same row id; a renamed user stays the same)."""
    orm_user = user.orm_user
    return (orm_user.id, str(orm_user.created))


def user_record(spawner) -> UserRecord:
    """The record of `spawner`'s user (`record_of`)."""
    return record_of(spawner.services, spawner.user)


def record_of(services, user) -> UserRecord:
    """The record of `user` (JupyterHub's): one object per user in the hub, kept by its `services`
    (spawner/hub/slurm/services.py), read from the database the first time, taken over from an older hub's
    session records."""
    kept: dict[tuple, UserRecord] = services.shared(("user records",), dict)
    key = _key(user)
    if key not in kept:
        kept[key] = _load(user)
    return kept[key]


def save_user_record(spawner) -> None:
    """Write the user's record to the hub's database now; nothing for a user deleted meanwhile (a run's end the
    tracker was still writing): their row went with them, and another user may have their row id by now."""
    user = spawner.user
    if not still_there(user):
        spawner.services.shared(("user records",), dict).pop(_key(user), None)
        log.info("%s was deleted: their record is not saved", user.name)
        return
    row = user.db.get(UserRecordRow, user.orm_user.id)
    state = user_record(spawner).to_state()
    if row is None:
        user.db.add(UserRecordRow(user_id=user.orm_user.id, state=state))
    else:
        row.state = state
    try:
        user.db.commit()
    except SQLAlchemyError:
        user.db.rollback()  # the hub's one database session stays usable for everyone else
        raise


def still_there(user) -> bool:
    """Whether JupyterHub's user `user` is still in the database as this very row."""
    orm_user = user.orm_user
    return not sa_inspect(orm_user).was_deleted and user.db.get(orm.User, orm_user.id) is orm_user


def _load(user) -> UserRecord:
    row = user.db.get(UserRecordRow, user.orm_user.id)
    if row is not None:
        return UserRecord.from_state(row.state)
    # none yet: what an older hub kept in its sessions' records comes over, in one commit
    old = {name: dict(s.state or {}) for name, s in user.orm_user.orm_spawners.items()}
    kept = old.get("", {})
    moved = {k: kept[k] for k in USER_KEYS if k in kept}
    for name, state in old.items():  # a named session's own history, from a hub older still
        if name and isinstance(state.get("history"), list):
            moved.setdefault("history", [])
            moved["history"] = moved["history"] + [{"name": name, **e} for e in state["history"] if isinstance(e, dict)]
    record = UserRecord.from_state(moved)
    if not any(k in state for state in old.values() for k in USER_KEYS):
        return record  # no row until there is something to keep (save_user_record)
    user.db.add(UserRecordRow(user_id=user.orm_user.id, state=record.to_state()))
    for name, orm_spawner in user.orm_user.orm_spawners.items():
        orm_spawner.state = {k: v for k, v in old[name].items() if k not in USER_KEYS}
        loaded = user.spawners[name] if name in user.spawners else None  # JupyterHub's session in memory, if any
        if loaded is not None and hasattr(loaded, "record"):
            loaded.record.legacy_user = {}  # never written back
    user.db.commit()
    log.info("%s's history, runs and mail choice moved to the user's own record", user.name)
    return record


def users_with_open_runs(db) -> list:
    """The orm users whose runs have not all ended (the runs tracker follows them from the hub's start), in their
    own records or, not moved yet, in an older hub's unnamed session's."""

    def open_in(state: object) -> bool:  # as UserRecord.from_state reads them: a run has its job id
        runs = state.get("runs") if isinstance(state, dict) else None
        return isinstance(runs, list) and any(
            isinstance(r, dict) and isinstance(r.get("job_id"), str) and not r.get("ended") for r in runs
        )

    users = {row.user_id for row in db.query(UserRecordRow) if open_in(row.state)}
    for orm_spawner in db.query(orm.Spawner).filter(orm.Spawner.name == ""):
        if open_in(orm_spawner.state) and orm_spawner.user is not None:
            users.add(orm_spawner.user.id)
    return [db.get(orm.User, user_id) for user_id in sorted(users)]

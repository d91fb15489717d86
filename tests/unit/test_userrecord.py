"""A user's record (spawner/hub/session/userrecord.py): its own row beside JupyterHub's tables, taken over from
the unnamed session's record an older hub wrote, and gone with the user."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from jupyterhub import orm

from spawner.hub.session import userrecord
from spawner.hub.session.record import SessionRecord
from spawner.hub.session.userrecord import (
    UserRecord,
    UserRecordRow,
    save_user_record,
    user_record,
    users_with_open_runs,
)

HISTORY = [{"job_id": "41", "ended": "2026-11-22T17:00", "why": "Stopped through the portal."}]
RUNS = [{"job_id": "50", "path": "train.ipynb"}, {"job_id": "51", "path": "grid.ipynb", "ended": "2026-11-22"}]
USAGE_LOG = [{"job_id": "41", "ended": "2026-11-22T17:00", "gpu_hours": 8.0}]


@pytest.fixture
def db():
    # JupyterHub makes the portal's table with its own (orm.new_session_factory: Base.metadata.create_all)
    session = orm.new_session_factory("sqlite:///:memory:")()
    yield session
    session.close()


class Loaded(dict):
    """JupyterHub's user.spawners: the sessions it holds in memory, by name."""


def a_session(db, name: str, state: dict, services=None, loaded: dict | None = None):
    """A spawner of user `name` as the user record sees one: its user (JupyterHub's wrapper) and the services."""
    orm_user = db.query(orm.User).filter_by(name=name).first()
    if orm_user is None:
        orm_user = orm.User(name=name)
        db.add(orm_user)
        db.commit()
    orm_spawner = orm.Spawner(user=orm_user, name="", state=state)
    db.add(orm_spawner)
    db.commit()
    user = SimpleNamespace(name=name, db=db, orm_user=orm_user, spawners=Loaded(loaded or {}))
    kept: dict = {}
    services = services or SimpleNamespace(shared=lambda key, make: kept.setdefault(key, make()))
    return SimpleNamespace(user=user, services=services)


def test_the_record_reads_what_it_saved_and_drops_what_does_not_read():
    record = UserRecord(history=HISTORY, usage_log=USAGE_LOG, runs=RUNS, notify_mail=True)
    assert UserRecord.from_state(record.to_state()) == record
    assert UserRecord().to_state() == {"version": 1}
    junk = {"history": [HISTORY[0], "junk"], "runs": [RUNS[0], {"no": "job"}], "notify_mail": "yes", "usage_log": 3}
    assert UserRecord.from_state(junk) == UserRecord(history=HISTORY, runs=[RUNS[0]])


def test_an_older_hubs_unnamed_session_record_is_taken_over_in_one_commit(db):
    old = {"version": 1, "job_id": "42", "start_done": True, "history": HISTORY, "runs": RUNS}
    old |= {"usage_log": USAGE_LOG, "notify_mail": True, "last_end": "ended"}
    loaded = SimpleNamespace(record=SessionRecord.from_state(old))  # JupyterHub holds the session: it runs
    spawner = a_session(db, "alice", old, loaded={"": loaded})
    record = user_record(spawner)
    assert record == UserRecord(history=HISTORY, usage_log=USAGE_LOG, runs=RUNS, notify_mail=True)
    orm_user = spawner.user.orm_user
    assert db.get(UserRecordRow, orm_user.id).state == record.to_state()  # saved
    # the session keeps its own: its job and why it ended, nothing of the user's, in the database and in memory
    assert orm_user.orm_spawners[""].state == {"version": 1, "job_id": "42", "start_done": True, "last_end": "ended"}
    assert loaded.record.legacy_user == {} and "runs" not in loaded.record.to_state()
    assert user_record(spawner) is record  # one object for the hub


def test_a_new_user_has_no_row_until_something_is_kept(db):
    spawner = a_session(db, "bob", {})
    assert user_record(spawner) == UserRecord()
    assert db.query(UserRecordRow).count() == 0
    user_record(spawner).notify_mail = True
    save_user_record(spawner)
    assert UserRecord.from_state(db.get(UserRecordRow, spawner.user.orm_user.id).state).notify_mail


def test_the_row_goes_with_the_user_and_a_new_user_of_the_same_name_starts_empty(db):
    spawner = a_session(db, "carol", {"runs": RUNS})
    assert user_record(spawner).runs == RUNS
    db.delete(spawner.user.orm_user)
    db.commit()
    assert db.query(UserRecordRow).count() == 0  # its foreign key: ON DELETE CASCADE
    again = a_session(db, "carol", {}, services=spawner.services)  # same services: the hub's cache
    assert user_record(again) == UserRecord()


def test_a_deleted_users_record_is_saved_nowhere_not_even_under_their_row_id_made_again(db):
    old = a_session(db, "henry", {"runs": RUNS})
    user_record(old).runs[0]["why"] = "the mail could not be sent"  # the tracker, still writing when he went
    old_id = old.user.orm_user.id
    db.delete(old.user.orm_user)
    db.commit()
    newcomer = a_session(db, "ivy", {}, services=old.services)
    assert newcomer.user.orm_user.id == old_id  # SQLite gives the next user the deleted row's id
    save_user_record(old)
    assert db.query(UserRecordRow).count() == 0 and user_record(newcomer) == UserRecord()
    assert db.query(orm.User).count() == 1  # and the hub's database session goes on


def test_the_users_with_runs_not_ended_are_found_in_their_records_and_in_older_ones(db):
    moved = a_session(db, "dave", {"runs": RUNS})
    user_record(moved)  # taken over: in dsportal_user_records now
    a_session(db, "erin", {"runs": [RUNS[0]]})  # an older hub's, not taken over yet
    a_session(db, "frank", {"runs": [RUNS[1], {"path": "no-job.ipynb"}]})  # every run ended, or no run at all
    assert sorted(u.name for u in users_with_open_runs(db)) == ["dave", "erin"]


def test_a_named_sessions_own_history_of_a_hub_older_still_comes_along(db):
    spawner = a_session(db, "grace", {"history": HISTORY})
    orm_user = spawner.user.orm_user
    db.add(orm.Spawner(user=orm_user, name="train", state={"history": [{"job_id": "40", "ended": "2026-11-21"}]}))
    db.commit()
    assert user_record(spawner).history == [*HISTORY, {"name": "train", "job_id": "40", "ended": "2026-11-21"}]
    assert orm_user.orm_spawners["train"].state == {}
    assert userrecord.USER_KEYS == ("history", "runs", "usage_log", "notify_mail")

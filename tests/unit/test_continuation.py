"""Continuing a session in a new job: the pure parts on each side (hub: spawner/hub/continuation/; the session's
server: spawner/jupyter/continuation/session.py)."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest

from spawner.hub.continuation import automatic
from spawner.hub.continuation.automatic import lead_seconds
from spawner.hub.continuation.handlers import automatic_choice, server_named
from spawner.hub.continuation.service import (
    ContinueRefused,
    carried_words,
    check_can_continue,
    checked_summary,
    refuse_busy,
    successor_options,
)
from spawner.hub.session.userrecord import UserRecord
from spawner.jupyter.continuation import terminals
from spawner.jupyter.continuation.session import forget_old, summary


def test_the_successor_asks_for_the_same_shape_and_names_the_job_it_continues():
    options = {"partition": "sxm2", "gpus": 2, "gpu_type": "a100", "account": "ml", "qos": "long", "hours": 8}
    assert successor_options(options, "4711") == {**options, "continue_from": "4711"}
    # a session that was itself a continuation continues from its own job, not its predecessor's
    assert successor_options({**options, "continue_from": "4700"}, "4711") == {**options, "continue_from": "4711"}
    assert successor_options(None, "9") == {"continue_from": "9"}


def test_what_was_carried_in_words():
    notebooks = {
        "train.ipynb": {"carried": 41, "not": {"link": "a socket", "rows": "a generator"}},
        "r.ipynb": {"carried": 1, "not": {}},
        "long.ipynb": {"carried": 0, "not": {}, "refused": "the kernel did not answer within 130 s"},
    }
    assert carried_words(notebooks) == "3 notebook(s): 42 variable(s) carried, 2 not; 1 kernel(s) carried nothing"
    assert carried_words({}) == "0 notebook(s): 0 variable(s) carried, 0 not"


def test_the_body_names_one_session():
    assert server_named({"server": "train"}) == ("train", False)
    assert server_named({}) == ("", False)
    assert server_named({"server": "", "force": True}) == ("", True)
    for wrong in ([], {"server": 3}, {"server": "x", "gpus": 4}, {"server": "x" * 256}, {"force": "yes"}):
        with pytest.raises(ValueError):
            server_named(wrong)


def test_the_sessions_summary_is_read_as_a_summary_or_refused():
    """The summary comes from code the user (or a guest) runs: its shape is checked, never trusted."""
    found = {
        "notebooks": {
            "a.ipynb": {"carried": 2, "not": {"link": "a socket"}, "extra": [1]},
            "b.ipynb": {"carried": 0, "not": {}, "refused": "busy", "busy": True},
        }
    }
    assert checked_summary(found) == {
        "a.ipynb": {"carried": 2, "not": {"link": "a socket"}},
        "b.ipynb": {"carried": 0, "not": {}, "refused": "busy", "busy": True},
    }
    for wrong in (
        {},
        {"notebooks": []},
        {"notebooks": {"a": 1}},
        {"notebooks": {"a": {"not": 5}}},
        {"notebooks": {"a": {"carried": "x", "not": {}}}},
        {"notebooks": {"a": {"carried": True}}},
        {"notebooks": {"a": {"carried": 1, "not": {"x": 3}}}},
    ):
        with pytest.raises(ValueError):
            checked_summary(wrong)


def test_a_cell_still_running_stops_nothing_unless_the_user_says_so():
    notebooks = {"long.ipynb": {"carried": 0, "not": {}, "refused": "no answer", "busy": True}}
    with pytest.raises(ContinueRefused) as refused:
        refuse_busy(notebooks, force=False)
    assert refused.value.status == 409
    assert str(refused.value).startswith("A cell is still running in long.ipynb: its variables were not carried")
    refuse_busy(notebooks, force=True)
    refuse_busy({"a.ipynb": {"carried": 1, "not": {}}}, force=False)


def test_a_continuation_waiting_for_its_new_job_outlives_the_hub():
    record = UserRecord(continuations={"": "4711", "train": "12"})
    assert UserRecord.from_state(record.to_state()).continuations == {"": "4711", "train": "12"}
    bad = {**record.to_state(), "continuations": {"": 4711, "x": "../y", "train": "12"}}
    assert UserRecord.from_state(bad).continuations == {"train": "12"}


def spawner(enabled=True, **facts):
    settings = SimpleNamespace(sessions=SimpleNamespace(continuation=SimpleNamespace(enabled=enabled)))
    return SimpleNamespace(
        settings=settings, **{"continuing": False, "pending": None, "ready": True, "job_id": "7", **facts}
    )


@pytest.mark.parametrize(
    "facts, status, words",
    [
        ({"enabled": False}, 403, "The admin has not enabled continuing sessions here."),
        ({"continuing": True}, 409, "This session is being continued already"),
        ({"pending": "spawn"}, 409, "Only a running session can be continued"),
        ({"pending": "stop"}, 409, "Only a running session can be continued"),
        ({"ready": False, "job_id": ""}, 409, "Only a running session can be continued"),
    ],
)
def test_only_a_running_session_of_an_admin_who_allows_it_continues(facts, status, words):
    with pytest.raises(ContinueRefused) as refused:
        check_can_continue(spawner(**facts))
    assert refused.value.status == status and str(refused.value).startswith(words)
    check_can_continue(spawner())


def test_carried_folders_past_the_admins_hours_are_deleted_but_not_the_one_being_continued(tmp_path):
    root = tmp_path / "continuation"
    root.mkdir(mode=0o700)
    for name in ("100", "200", "300"):
        (root / name).mkdir(mode=0o700)
        (root / name / "kernels.json").write_text("{}")
    day_ago = time.time() - 25 * 3600
    for name in ("100", "200"):
        os.utime(root / name, (day_ago, day_ago))
    assert forget_old(root, keep_hours=24, keep="200") == ["100"]
    assert sorted(p.name for p in root.iterdir()) == ["200", "300"]
    root.chmod(0o777)  # another account could have placed what is here: nothing is followed or removed
    os.utime(root / "300", (day_ago, day_ago))
    assert forget_old(root, keep_hours=24) == []
    assert forget_old(tmp_path / "none", keep_hours=24) == []


def test_the_summary_counts_each_notebooks_variables():
    manifest = {
        "train.ipynb": {
            "language": "python",
            "folder": "/x",
            "report": {"carried": ["a", "b"], "not": {"s": "a socket"}},
        },
        "busy.ipynb": {"language": "python", "folder": "/y", "report": {"carried": [], "not": {}, "refused": "busy"}},
    }
    assert summary(manifest) == {
        "train.ipynb": {"carried": 2, "not": {"s": "a socket"}},
        "busy.ipynb": {"carried": 0, "not": {}, "refused": "busy"},
    }
    assert summary({"train.ipynb": {"carried": ["a"], "not": {}}}) == {"train.ipynb": {"carried": 1, "not": {}}}


class FakeTerminals:
    """jupyter_server_terminals' manager, as far as the reopening uses it."""

    def __init__(self, **running):
        self.terminals = dict(running)
        self.created = []

    def create(self, name: str, cwd: str):
        self.created.append((name, cwd))
        self.terminals[name] = object()


def test_terminals_reopen_by_name_in_their_folders_or_the_home(tmp_path):
    base = tmp_path / "4711"
    base.mkdir(mode=0o700)
    there = tmp_path / "work"
    there.mkdir()
    shell = SimpleNamespace(ptyproc=SimpleNamespace(pid=os.getpid()))  # this process's own cwd
    found = terminals.places(SimpleNamespace(terminals={"1": shell, "2": SimpleNamespace()}))
    assert found == [{"name": "1", "cwd": os.getcwd()}]  # one whose shell ended meanwhile is left out
    terminals.write(base, [{"name": "1", "cwd": str(there)}, {"name": "2", "cwd": str(tmp_path / "gone")}])
    assert oct((base / "terminals.json").stat().st_mode & 0o777) == "0o600"
    read = terminals.read(base)
    manager = FakeTerminals(**{"2": object()})  # a terminal of that name is open already: left as it is
    assert terminals.reopen(manager, read, "/home/alice") == ["1"]
    assert manager.created == [("1", str(there))]
    assert terminals.reopen(FakeTerminals(), read[1:], "/home/alice") == ["2"]  # its folder is gone: the home


def test_terminals_written_where_others_may_write_or_named_oddly_are_not_read(tmp_path):
    base = tmp_path / "4711"
    base.mkdir(mode=0o700)
    terminals.write(base, [{"name": "../x", "cwd": "/"}, {"name": "3", "cwd": 4}, {"name": "4", "cwd": "/tmp"}])
    assert terminals.read(base) == [{"name": "4", "cwd": "/tmp"}]
    (base / "terminals.json").chmod(0o666)
    assert terminals.read(base) == []
    assert terminals.read(tmp_path / "none") == []


def automatic_spawner(chosen=True, left=200, **facts):
    """A running session whose user chose (or not) to continue it automatically, `left` seconds before its end."""
    sessions = SimpleNamespace(save_minutes=3, continuation=SimpleNamespace(enabled=True, dump_seconds=120))
    end = (datetime(2026, 11, 30, 12, 0) + timedelta(seconds=left)).isoformat(timespec="seconds")
    watcher = SimpleNamespace(last_known=lambda job: SimpleNamespace(end=end) if job == "7" else None)
    running = {"ready": True, "pending": None, "job_id": "7", "continuing": False}
    record = SimpleNamespace(start_done=True, minutes=facts.pop("minutes", 12))
    spawner = SimpleNamespace(
        name="",
        settings=SimpleNamespace(sessions=sessions),
        record=record,
        slurm_client=SimpleNamespace(watcher=watcher),
        **{**running, **facts},
    )
    return spawner, None


def test_a_session_chosen_to_continue_automatically_is_due_once_near_its_end(monkeypatch):
    now = datetime(2026, 11, 30, 12, 0)
    assert lead_seconds(SimpleNamespace(sessions=automatic_spawner()[0].settings.sessions)) == 330
    records = {}
    monkeypatch.setattr(automatic, "user_record", lambda spawner: records[id(spawner)])

    def case(chosen=True, left=200, tried=(), **facts):
        spawner, _ = automatic_spawner(chosen, left, **facts)
        records[id(spawner)] = UserRecord(auto_continue={"": True} if chosen else {})
        return automatic.due(spawner, set(tried), now)

    assert case()
    assert not case(left=400)  # not near its end yet
    assert not case(chosen=False)
    assert not case(tried={"7"})  # once per job
    assert not case(pending="stop")
    assert not case(continuing=True)
    assert not case(ready=False)
    assert not case(minutes=10)  # under twice the lead (5.5 min): its successor would be due at once, and so on


def test_the_automatic_choice_reads_a_name_and_on_or_off():
    assert automatic_choice({"server": "train", "on": True}) == ("train", True)
    assert automatic_choice({"server": "", "on": False}) == ("", False)
    for wrong in (
        {},
        {"server": ""},
        {"server": 1, "on": True},
        {"server": "", "on": "yes"},
        {"server": "", "on": 1, "x": 2},
    ):
        with pytest.raises(ValueError):
            automatic_choice(wrong)
    record = UserRecord(auto_continue={"train": True})
    assert UserRecord.from_state(record.to_state()).auto_continue == {"train": True}
    assert UserRecord.from_state({"auto_continue": {"a": "yes", "b": True}}).auto_continue == {"b": True}


def test_a_private_json_file_is_never_written_through_a_link(tmp_path):
    from spawner.job.ownership import read_private_json, write_private_json

    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    write_private_json(folder / "a.json", {"x": 1})
    assert oct((folder / "a.json").stat().st_mode & 0o777) == "0o600"
    assert read_private_json(folder, "a.json") == {"x": 1}
    (folder / "b.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(OSError):
        write_private_json(folder / "b.json", {"x": 2})
    assert not (tmp_path / "elsewhere.json").exists()
    assert read_private_json(folder, "b.json") is None

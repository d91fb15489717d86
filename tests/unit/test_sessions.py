"""A user's several sessions: names, the admin's limits across them, the merged history (pure)."""

from __future__ import annotations

import pytest

from spawner.hub.home.page import merged_history
from spawner.hub.request.sessionlimits import NAME_RULE, Held, label, name_problem, room_problem
from spawner.hub.session.idle import culler_timeout


@pytest.mark.parametrize("name", ["train", "a", "gpu-4", "x1-y2-z3", "a" * 30])
def test_names_jupyterhub_accepts_are_accepted(name):
    assert name_problem(name) == ""


@pytest.mark.parametrize("name", ["Train", "1gpu", "gpu-", "a--b", "a_b", "a b", "a" * 31, "é", "a/b", "-a"])
def test_other_names_are_refused_with_the_rule(name):
    assert name_problem(name) == f"A session cannot be called {name!r}: use {NAME_RULE}."


def test_an_unprintable_name_is_shown_escaped():
    assert name_problem("a\nb").startswith("A session cannot be called \"'a\\\\nb'...\"")


def test_a_session_fits_beside_the_others_within_the_limits():
    assert room_problem([Held("", 1)], gpus=2, max_per_user=3, max_gpus=4) == ""
    assert room_problem([], gpus=4, max_per_user=1, max_gpus=0) == ""  # 0: no limit on GPUs


def test_one_session_too_many_names_the_others():
    assert room_problem([Held("", 0), Held("train", 1)], gpus=0, max_per_user=2, max_gpus=0) == (
        "You already run 2 sessions (your unnamed session, session 'train'), the most one user may run at once "
        "here (2). Stop one of them from the home page, then start this one."
    )


def test_gpus_too_many_across_sessions_say_how_many_are_left():
    assert room_problem([Held("train", 3)], gpus=2, max_per_user=3, max_gpus=4) == (
        "Your sessions may hold 4 GPUs together here; your other sessions hold 3, so this one may ask for at most 1. "
        "Ask for fewer GPUs, or stop a session first."
    )


def test_labels():
    assert (label(""), label("train")) == ("your unnamed session", "session 'train'")


class _Record:
    def __init__(self, history):
        self.history = history


class _Session:
    def __init__(self, name, history):
        self.name, self.record = name, _Record(history)


def test_the_history_of_all_sessions_newest_first_with_their_names():
    sessions = [
        _Session(
            "",
            [
                {"job_id": "3", "ended": "2026-11-23T10:00"},
                {"job_id": "2", "ended": "2026-11-23T09:00", "name": "train"},
            ],
        ),
        _Session("eval", [{"job_id": "4", "ended": "2026-11-23T11:00"}]),
    ]
    assert merged_history(sessions, 2) == [
        {"name": "eval", "job_id": "4", "ended": "2026-11-23T11:00"},
        {"name": "", "job_id": "3", "ended": "2026-11-23T10:00"},
    ]
    assert merged_history(sessions, 5)[2]["name"] == "train"  # the unnamed record keeps every session's


def test_each_culler_knows_its_own_timeout():
    assert culler_timeout("dsportal-idle-culler-7200") == 7200
    assert culler_timeout("dsportal-idle-culler-x") == culler_timeout("devcluster-admin") == 0

"""A user's several sessions: names, the admin's limits across them, the merged history (pure)."""

from __future__ import annotations

import pytest

from spawner.hub.home.page import merged_history
from spawner.hub.request.sessionlimits import NAME_RULE, Held, label, name_problem, room_problem, untracked_jobs
from spawner.hub.session.idle import culler_timeout
from spawner.hub.slurm.held import HeldJob, gpus_of, held_jobs_argv, parse_held_jobs, start_comment
from spawner.slurmvocab import UnreadableAnswer


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
        "You hold 3 GPUs in 1 session (session 'train': 3), and sessions.max_gpus_per_user is 4 here: it counts the "
        "GPUs of your sessions, runs and sweeps together (a sweep's: those of the tasks it may run at once). This "
        "session asks for 2, so it may ask for at most 1. Ask for fewer GPUs, or stop a session or cancel a run or "
        "sweep first."
    )


def test_a_job_no_session_owns_counts_and_is_named_with_why():
    held = [Held("train", 0), Held("", 4, untracked_job="812")]
    assert room_problem(held, gpus=1, max_per_user=3, max_gpus=4).endswith(
        "This session asks for 1, so it may ask for at most 0. Ask for fewer GPUs, or stop a session or cancel a run "
        "or sweep first. Slurm still holds job 812 of a start that failed (the scheduler answered too late); the hub "
        "cancels it at its next two checks for such jobs."
    )
    assert room_problem(held, gpus=0, max_per_user=2, max_gpus=0).startswith(
        "You already run 2 sessions (session 'train', job 812), the most one user may run at once here (2)."
    )


def test_jobs_slurm_holds_that_no_session_owns_are_held_oldest_first():
    in_slurm = {"12": HeldJob(2), "9": HeldJob(1), "15": HeldJob(0)}
    assert untracked_jobs(in_slurm, tracked={"15", ""}, in_flight=[]) == [
        Held("", 1, untracked_job="9"),
        Held("", 2, untracked_job="12"),
    ]


def test_a_start_in_flight_is_not_counted_twice_for_its_own_job():
    """A start whose sbatch has not answered is held already: one job with its comment and GPUs is its own."""
    mine = start_comment("ab12")
    in_slurm = {"9": HeldJob(2, "dsportal-start:old"), "12": HeldJob(2, mine), "13": HeldJob(1, "")}
    assert untracked_jobs(in_slurm, tracked=set(), in_flight=[(mine, 2, 0)]) == [
        Held("", 2, untracked_job="9"),
        Held("", 1, untracked_job="13"),
    ]
    # a leftover of the same size is not taken for it: only its comment makes a job a start's own
    assert untracked_jobs({"9": HeldJob(0, "")}, tracked=set(), in_flight=[(mine, 0, 0)]) == [
        Held("", 0, untracked_job="9")
    ]
    # a comment copied onto a leftover: one of the two is the start's own, the other counts
    both = {"9": HeldJob(2, mine), "12": HeldJob(2, mine)}
    assert untracked_jobs(both, tracked=set(), in_flight=[(mine, 2, 0)]) == [Held("", 2, untracked_job="9")]
    # ... and onto a bigger leftover while the start's own job lost it: the bigger one is not taken for the start
    swapped = {"9": HeldJob(4, mine), "12": HeldJob(1, "")}
    assert untracked_jobs(swapped, tracked=set(), in_flight=[(mine, 1, 0)]) == [
        Held("", 4, untracked_job="9"),
        Held("", 1, untracked_job="12"),
    ]


def test_the_users_held_jobs_query_and_its_answer():
    assert held_jobs_argv("squeue", "dsportal", "alice") == [
        "squeue",
        "--noheader",
        "--all",
        "--states=all",
        "--name=dsportal",
        "--user=alice",
        "--format=%i|%T|%b|%k",
    ]
    answer = (
        "101|RUNNING|gres:gpu:2|dsportal-start:ab\n102|PENDING|N/A|\n103_4|RUNNING|gres:gpu:1|\n"
        "104+0|RUNNING|gres:gpu:1|\n105|STOPPED|gres/gpu:a100:4|a|b\n106|COMPLETING|gres:gpu:1|\n"
        "107|CANCELLED|gres:gpu:1|\n\n"
    )
    assert parse_held_jobs(answer) == {
        "101": HeldJob(2, "dsportal-start:ab"),
        "102": HeldJob(0, ""),
        "105": HeldJob(4, "a|b"),
    }
    assert [gpus_of(g) for g in ("gpu:2", "gpu:v100:4(S:0-1)", "gres:gpu:1,gres:mps:100", "(null)")] == [2, 4, 1, 0]
    assert parse_held_jobs("\u00b2|RUNNING|gres:gpu:1|\n") == {}  # a digit to str.isdigit(), not to int()


@pytest.mark.parametrize(
    "answer",
    [
        "101|RUNNING|gres:gpu:4|x\n101|COMPLETED|gres:gpu:4|",  # a comment's line break forging the job's end
        "101|RUNNING|gres:gpu:4",  # a field missing
        "101|RUNNING|gpus=four|",  # GPUs in words this does not read
    ],
)
def test_an_answer_that_could_hide_a_job_is_unreadable(answer):
    with pytest.raises(UnreadableAnswer):
        parse_held_jobs(answer)


def test_labels():
    assert (label(""), label("train")) == ("your unnamed session", "session 'train'")


def test_the_history_of_all_sessions_newest_first_with_their_names():
    history = [  # the user's record's (spawner/hub/session/userrecord.py): a named session's entry has its name
        {"job_id": "3", "ended": "2026-11-23T10:00"},
        {"job_id": "2", "ended": "2026-11-23T09:00", "name": "train"},
        {"job_id": "4", "ended": "2026-11-23T11:00", "name": "eval"},
    ]
    assert merged_history(history, 2) == [
        {"name": "eval", "job_id": "4", "ended": "2026-11-23T11:00"},
        {"name": "", "job_id": "3", "ended": "2026-11-23T10:00"},
    ]
    assert merged_history(history, 5)[2]["name"] == "train"  # the user's record keeps every session's


def test_each_culler_knows_its_own_timeout():
    assert culler_timeout("dsportal-idle-culler-7200") == 7200
    assert culler_timeout("dsportal-idle-culler-x") == culler_timeout("devcluster-admin") == 0


def test_a_job_on_shares_of_a_gpu_holds_their_fraction_of_a_gpu_against_the_users_gpus():
    answer = "41|RUNNING|gres:shard:2|dsportal-start:ab\n42|PENDING|gres/shard:a100:1|\n43|RUNNING|gres:gpu:1|\n"
    held = parse_held_jobs(answer)
    assert held == {"41": HeldJob(0, "dsportal-start:ab", 2), "42": HeldJob(0, "", 1), "43": HeldJob(1, "", 0)}
    assert untracked_jobs(held, tracked=set(), in_flight=[], shards_per_gpu=4) == [
        Held("", 0.5, untracked_job="41"),
        Held("", 0.25, untracked_job="42"),
        Held("", 1, untracked_job="43"),
    ]
    # a portal that says no fraction counts a share as a whole GPU, as the GPU cap does (slurmgres.gpu_fraction)
    assert [h.gpus for h in untracked_jobs(held, tracked=set(), in_flight=[])] == [1, 1, 1]
    # a start on shares waiting for its sbatch is its own job only with its shards too: not a bigger leftover's
    assert [h.untracked_job for h in untracked_jobs(held, set(), [("dsportal-start:ab", 0, 1)], 4)] == [
        "41",
        "42",
        "43",
    ]
    assert [h.untracked_job for h in untracked_jobs(held, set(), [("dsportal-start:ab", 0, 2)], 4)] == ["42", "43"]

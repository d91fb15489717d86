"""The session's clock and extensions: the rules as tables (Slurm's answers: tests/unit/test_slurmvocab.py)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from portal.config import parse_config
from spawner.hub.clock.extension import Limits, extension
from spawner.hub.home.dashboard import session_card
from spawner.hub.request.resources import Resources
from spawner.hub.session.record import add_to_history, history_entry
from spawner.jupyter.clock.clock import SessionClock, saved_paths
from spawner.root.extend import BAD_ARGUMENTS, REFUSED, Refused, check_arguments, check_request
from spawner.slurmlimits import Charged, Group
from spawner.slurmvocab import Job, JobInfo, parse_job

NOW = datetime(2026, 11, 22, 12, 0, 0)
LDAP = {"bind_dn_template": "uid={username},dc=x"}


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["12"],
        ["12", "60", "x"],
        ["0", "60"],
        ["12;id", "60"],
        ["12", "-60"],
        ["12", "60 "],
        ["12", "1e3"],
        ["1" * 11, "60"],
    ],
)
def test_the_helper_takes_exactly_two_whole_numbers(argv):
    with pytest.raises(Refused) as e:
        check_arguments(argv)
    assert e.value.status == BAD_ARGUMENTS


def _settings(**slurm):
    return parse_config({"ldap": LDAP, "slurm": {"allow_extend": True, "extend_max_hours": 12, **slurm}})


RUNNING = Job("dsportal", "alice", "RUNNING", 480, "gpu")


@pytest.mark.parametrize(
    "settings, job, minutes, why",
    [
        (_settings(allow_extend=False), RUNNING, 540, "not enabled"),
        (_settings(), None, 540, "not a session of this portal"),
        (_settings(), Job("mine", "alice", "RUNNING", 480, "gpu"), 540, "not a session of this portal"),
        # renamed by its owner, with a line break and what once read as fields of its own: no session any more
        (_settings(), Job("dsportal|alice|RUNNING|60|sxm2\nx", "alice", "RUNNING", 60, "debug"), 120, "not a session"),
        (_settings(), Job("dsportal\n", "alice", "RUNNING", 60, "debug"), 120, "not a session of this portal"),
        (_settings(), Job("dsportal", "root", "RUNNING", 480, "gpu"), 540, "does not belong to a portal user"),
        (_settings(), Job("dsportal", "daemon", "RUNNING", 480, "gpu"), 540, "does not belong to a portal user"),
        (_settings(), Job("dsportal", "alice", "PENDING", 480, "gpu"), 540, "pending, not running"),
        (_settings(), RUNNING, 480, "must add time"),
        (_settings(), RUNNING, 721, "at most 12 h with extensions"),
        (_settings(extend_max_hours=24), RUNNING, 721, "Partition gpu allows at most 720 minutes"),
    ],
)
def test_the_helper_refuses_what_is_not_a_portal_sessions_extension(settings, job, minutes, why):
    uids = {"alice": 1001, "root": 0, "daemon": 1}
    with pytest.raises(Refused) as e:
        check_request(settings, job, "12", minutes, 720, uid_of=uids.__getitem__)
    assert (e.value.status, why in str(e.value)) == (REFUSED, True), str(e.value)


def test_the_helper_refuses_a_session_its_owner_renamed_to_forge_fields():
    # alice's session on the 1-hour debug partition, renamed so that squeue's answer once began with a session
    # on sxm2 (12 h): the name is read last and whole, and is no session's name any more
    job = parse_job("12|alice|RUNNING|1:00:00|debug|dsportal|alice|RUNNING|60|sxm2\nx\n", "12")
    assert (job.partition, job.limit) == ("debug", 60)
    with pytest.raises(Refused, match="Job 12 is not a session of this portal"):
        check_request(_settings(), job, "12", 120, 60, uid_of={"alice": 1001}.__getitem__)


def test_the_helper_holds_an_extension_to_the_sessions_qos():
    """root is not held to a QOS's MaxWall by Slurm: a 1-hour QOS session is not extended past 60 minutes."""
    alice = {"alice": 1001}.__getitem__
    short, normal = Charged("The session's QOS short", Group(60)), Charged("The session's QOS normal", Group())
    with pytest.raises(Refused, match="The session's QOS short has a MaxWall of 01:00:00: at most 60 minutes per job."):
        check_request(_settings(), RUNNING, "12", 540, 720, uid_of=alice, charged=[short])
    assert check_request(_settings(), RUNNING, "12", 540, 720, uid_of=alice, charged=[normal]) is None


def test_the_helper_allows_an_extension_within_every_limit():
    assert check_request(_settings(), RUNNING, "12", 540, 720, uid_of={"alice": 1001}.__getitem__) is None
    assert check_request(_settings(), RUNNING, "12", 720, None, uid_of={"alice": 1001}.__getitem__) is None


def test_the_hub_side_extension_rule():
    limits = Limits(True, 60, 720)
    assert extension(480, limits) == (540, "")
    assert extension(660, limits) == (720, "")
    assert extension(700, limits) == (
        None,
        "Your session already has 11 h 40 min; with extensions a session may last at most 12 h here.",
    )
    assert extension(480, Limits()) == (None, "Extending sessions is not enabled on this portal.")


RES = Resources("sxm2", 2, 16, 2 * 48 * 1024, 480)


def test_the_session_card():
    running = JobInfo("7", "RUNNING", "", "node001", "alice", end="2026-11-22T14:05:30")
    card = session_card(
        "7",
        running,
        RES,
        start_done=True,
        stopping=False,
        message="m",
        minutes=480,
        limits=Limits(True, 60, 720),
        now=NOW,
    )
    assert card == {
        "state": "running",
        "job_id": "7",
        "message": "m",
        "node": "node001",
        "end": "2026-11-22T14:05:30",
        "seconds_left": 2 * 3600 + 5 * 60 + 30,
        "limit": "8 h",
        "partition": "sxm2",
        "gpus": 2,
        "cores": 16,
        "memory_gb": 96.0,
        "summary": "2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2",
        "extend": {"allowed": True, "why_not": "", "step": "1 h"},
    }
    queued = session_card(
        "8",
        JobInfo("8", "PENDING", "Resources"),
        RES,
        start_done=False,
        stopping=False,
        message="queued",
        minutes=480,
        limits=Limits(),
        now=NOW,
    )
    assert (queued["state"], queued["seconds_left"], queued["end"], queued["extend"]) == ("queued", None, "", None)
    starting = session_card(
        "8",
        JobInfo("8", "RUNNING", "", "node002"),
        None,
        start_done=False,
        stopping=False,
        message="",
        minutes=0,
        limits=Limits(True, 60, 720),
        now=NOW,
    )
    assert (starting["state"], starting["limit"], starting["extend"]["allowed"]) == ("starting", "", False)
    assert (
        session_card("8", None, RES, start_done=True, stopping=True, message="", minutes=480, limits=Limits(), now=NOW)[
            "state"
        ]
        == "stopping"
    )
    assert session_card(
        "", None, None, start_done=False, stopping=False, message="", minutes=0, limits=Limits(), now=NOW
    ) == {"state": "none"}


def test_history_keeps_the_newest_few_once_each():
    def entry(job):
        return history_entry(job, "1 GPU", {"gpus": 1}, "2026-11-22T08:00", NOW, "why")

    assert entry("3") == {
        "job_id": "3",
        "summary": "1 GPU",
        "options": {"gpus": 1},
        "submitted": "2026-11-22T08:00",
        "ended": "2026-11-22T12:00",
        "why": "why",
    }
    history: list = []
    for job in "12345":
        history = add_to_history(history, entry(job), 3)
    assert [e["job_id"] for e in history] == ["5", "4", "3"]
    assert [e["job_id"] for e in add_to_history(history, entry("4"), 3)] == ["4", "5", "3"]


def test_saved_reports_are_checked_before_they_reach_the_log():
    assert saved_paths({"saved": ["a.ipynb", "dir/b.py"]}) == (["a.ipynb", "dir/b.py"], [])
    assert saved_paths({"failed": ["c.txt"]}) == ([], ["c.txt"])
    for bad in (
        [],
        {"saved": "a"},
        {"saved": ["a\nforged log line"]},
        {"saved": [""]},
        {"other": []},
        {"saved": ["x"] * 201},
        {"saved": [3]},
    ):
        with pytest.raises(ValueError):
            saved_paths(bad)


def test_the_clock_asks_slurm_once_a_minute_and_says_when_to_save():
    asked = []

    async def run(argv):
        asked.append(argv)
        return "2026-11-22T12:10:00\n"

    clock = SessionClock("7", warn_minutes=[5, 15], save_minutes=3, now=lambda: NOW)
    clock.run = run

    async def scenario():
        first = await clock.answer()
        await asyncio.gather(clock.answer(), clock.answer())  # within the minute: the same answer, no squeue
        fresh = await clock.answer(fresh=True)  # asked again only after 5 s
        return first, fresh

    first, fresh = asyncio.run(scenario())
    assert first == {
        "job_id": "7",
        "end": "2026-11-22T12:10:00",
        "seconds_left": 600,
        "warn_minutes": [15, 5],
        "save_minutes": 3,
        "save_now": False,
        "extend_hours": None,
    }
    assert (fresh == first, len(asked)) == (True, 1)
    clock.now = lambda: datetime(2026, 11, 22, 12, 7, 0)
    assert asyncio.run(clock.answer())["save_now"] is True  # 3 minutes left
    clock.now = lambda: NOW
    clock.warning_arrived()  # Slurm's signal: save now, whatever the clock says
    assert asyncio.run(clock.answer())["save_now"] is True


def test_a_clock_without_an_answer_says_so():
    async def run(argv):
        raise OSError("squeue: error: Invalid job id specified")

    clock = SessionClock("7", now=lambda: NOW)
    clock.run = run
    assert asyncio.run(clock.answer()) == {
        "job_id": "7",
        "end": None,
        "seconds_left": None,
        "warn_minutes": [15, 5],
        "save_minutes": 3,
        "save_now": False,
        "extend_hours": None,
    }

"""Every session job has an owner: failed stops, hub restarts, late sbatch calls, unreadable answers.

Against the mock Slurm (real subprocesses); the same cases run against the
real dev cluster in tests/integration/test_ownership.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from types import SimpleNamespace

import pytest
from batchspawner import JobStatus
from jupyterhub import orm
from jupyterhub.spawner import SpawnException

from spawner.hub.session.reconciler import Reconciler, handed_over_in, held_by, orphans, owned_in_states, with_live
from spawner.hub.session.record import SessionRecord
from spawner.hub.session.userrecord import UserRecord, UserRecordRow, user_record
from spawner.hub.slurm.client import JobInfo, SlurmClient
from tests.component.test_spawner import start_running, until
from tests.support.mockslurm import fake_passwd

STOPPING = "is stopping (the scheduler is not answering yet)"


async def cancelled(task: asyncio.Task, spawner) -> None:
    """Cancel a start and wait until it has unwound (its Slurm commands killed).

    The shared listing it was waiting for runs on (shielded, for the other
    callers); it is let finish too, so that the test's event loop never closes
    on a command still starting.
    """
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await spawner.slurm_client.watcher.settled()


def restarted_spawner(spawner, state, a_config_file, a_home):
    """The spawner a restarted hub builds from the saved state."""
    from spawner.hub.session.spawner import SlurmGPUSpawner

    again = SlurmGPUSpawner(
        user=spawner.user, hub=spawner.hub, config_file=str(a_config_file), startup_poll_interval=0.05, stop_timeout=5
    )
    again.getpwnam = lambda name: fake_passwd(name, a_home)
    again.load_state(state)
    return again


async def test_a_stop_slurm_does_not_answer_keeps_the_job_and_refuses_a_new_session(
    a_spawner, mock_slurm, a_web_server
):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.fail("scancel", "unreachable")
    a_spawner.stop_timeout = 4  # room for a second try when one mock scancel takes a second on a busy machine
    await a_spawner.stop()  # retried with back-off for stop_timeout, then left to the reconciler
    assert len(mock_slurm.calls("scancel")) >= 2
    a_spawner.clear_state()  # what JupyterHub does after every stop
    assert a_spawner.job_id == job_id and a_spawner.get_state()["stopping"] is True
    assert mock_slurm.jobs()[job_id]["state"] == "RUNNING"
    assert await a_spawner.poll() == 1  # no longer a session, though still a job
    assert STOPPING in a_spawner.stopping_message()

    a_spawner.apply_session_options({"gpus": 1})
    with pytest.raises(SpawnException) as refused:
        await a_spawner.start()
    assert refused.value.status_code == 409 and STOPPING in refused.value.jupyterhub_message
    assert len(mock_slurm.calls("sbatch")) == 1  # nothing new submitted

    mock_slurm.heal()  # Slurm answers again: the next start ends the old job first, then submits
    a_spawner.api_token = "alice-server-token"  # as JupyterHub gives every start its token
    a_spawner.apply_session_options({"gpus": 1})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: len(mock_slurm.calls("sbatch")) == 2)
    assert mock_slurm.jobs()[job_id]["state"] == "CANCELLED"
    assert a_spawner.job_id != job_id and not a_spawner.record.stopping
    # the new job carries this start's API token (forgetting the old job must not drop it)
    assert mock_slurm.calls("sbatch")[-1]["env"]["JUPYTERHUB_API_TOKEN"] == "alice-server-token"
    await cancelled(task, a_spawner)


async def test_the_job_id_is_saved_the_moment_sbatch_answers(a_spawner, mock_slurm, tmp_path):
    db = orm.new_session_factory(f"sqlite:///{tmp_path / 'hub.sqlite'}")()
    user = orm.User(name="alice")
    db.add(user)
    db.commit()
    a_spawner.orm_spawner = orm.Spawner(user=user, name="")
    db.add(a_spawner.orm_spawner)
    db.commit()
    a_spawner.apply_session_options({"gpus": 1})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())
    [job_id] = mock_slurm.jobs()

    def committed() -> dict:  # read through a connection of its own: only what was committed
        with sqlite3.connect(tmp_path / "hub.sqlite") as conn:
            [(state,)] = conn.execute("SELECT state FROM spawners").fetchall()
        return json.loads(state) if state else {}

    await until(lambda: committed().get("job_id") == job_id)
    assert committed()["start_done"] is False  # still pending: the start is not done
    await cancelled(task, a_spawner)


async def test_a_start_the_hub_did_not_live_to_finish_is_cancelled_at_restart(
    a_spawner, mock_slurm, a_config_file, a_home
):
    a_spawner.apply_session_options({"gpus": 1})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: a_spawner.job_id)
    saved = a_spawner.get_state()
    await cancelled(task, a_spawner)  # the hub dies while the job waits in the queue
    job_id = saved["job_id"]
    restarted = restarted_spawner(a_spawner, saved, a_config_file, a_home)
    assert await restarted.poll() == 1
    assert mock_slurm.jobs()[job_id]["state"] == "CANCELLED"
    assert [c["argv"] for c in mock_slurm.calls("scancel")] == [[job_id]]


async def test_a_hub_restart_during_a_failed_stop_does_not_bring_the_session_back(
    a_spawner, mock_slurm, a_web_server, a_config_file, a_home
):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.fail("scancel", "unreachable")
    a_spawner.stop_timeout = 0.5
    await a_spawner.stop()
    restarted = restarted_spawner(a_spawner, a_spawner.get_state(), a_config_file, a_home)
    assert restarted.record.stopping and await restarted.poll() == 1
    assert owned_in_states([restarted.get_state()]) == set()  # the reconciler's to cancel


@pytest.mark.parametrize("trouble", ["garbage", "unreachable"])
async def test_an_unreadable_or_missing_answer_never_ends_a_session(a_spawner, mock_slurm, a_web_server, trouble):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.fail("squeue", trouble)
    a_spawner.poll_max_age = 0
    assert await a_spawner.query_job_status() == JobStatus.UNKNOWN
    assert await a_spawner.poll() is None and a_spawner.job_id == job_id


async def test_poll_after_the_end_logs_the_job_it_ended(a_spawner, mock_slurm, a_web_server, caplog):
    caplog.set_level(logging.INFO, logger=a_spawner.log.name)
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.set_job(job_id, state="TIMEOUT")
    a_spawner.poll_max_age = 0
    assert await a_spawner.poll() == 1
    assert await a_spawner.poll() == 1  # again, with nothing left: no second "has ended" line
    ended = [r.getMessage() for r in caplog.records if "has ended" in r.getMessage()]
    assert ended == [f"Session job {job_id} of alice has ended (TIMEOUT||127.0.0.1)"]


# --- the reconciler ---------------------------------------------------------------


def test_orphans_are_the_queued_portal_jobs_no_session_owns():
    listing = {
        "1": JobInfo("1", "RUNNING", "", "n1", "alice"),  # owned
        "2": JobInfo("2", "RUNNING", "", "n1", "bob"),  # nobody's: cancelled
        "3": JobInfo("3", "PENDING", "Priority", "", "carol"),  # carol's sbatch is in flight: next time
        "4": JobInfo("4", "COMPLETING", "", "n2", "dave"),  # already ending
        "5": JobInfo("5", "CANCELLED", "", "", "erin"),  # gone
        "6": JobInfo("6", "PENDING", "Resources", "", "Bad User"),  # not an account the portal serves
        "10": JobInfo("10", "PENDING", "Resources", "", "bob"),
        "11": JobInfo("11", "RUNNING", "", "n2", "alice"),  # not of the portal's name, but handed over: cancelled
        "12": JobInfo("12", "RUNNING", "", "n2", "bob"),  # handed over as alice's, but bob's now: left alone
        "13": JobInfo("13", "RUNNING", "", "n2", "frank"),  # another name, nobody's: not the portal's business
    }
    named = {"1", "2", "3", "4", "5", "6", "10", "99"}  # the portal's name; 99 is no longer listed
    handed_over = {"11": "alice", "12": "alice"}
    assert [j.job_id for j in orphans(listing, {"1"}, {"carol"}, named, handed_over)] == ["2", "10", "11"]
    assert owned_in_states([{"job_id": "1"}, {"job_id": "2", "stopping": True}, {}, None]) == {"1"}
    rows = [({"job_id": "1"}, "alice"), ({"job_id": "2", "stopping": True}, "bob"), ({}, "carol"), (None, "dave")]
    assert handed_over_in(rows) == {"2": "bob"}


async def test_the_reconciler_finds_a_handed_over_job_its_owner_renamed(a_spawner, mock_slurm, a_web_server):
    """A stop Slurm did not confirm hands the job to the reconciler, by id: its owner's new name hides nothing."""
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.set_job(job_id, name="dsportal\nmine now")
    reconciler = Reconciler(
        a_spawner.slurm_client, owned=lambda: set(), interval=60, max_age=0, handed_over=lambda: {job_id: "alice"}
    )
    assert await reconciler.run_once() == []  # first sighting
    assert await reconciler.run_once() == [job_id]
    assert mock_slurm.jobs()[job_id]["state"] in ("COMPLETING", "CANCELLED")
    # without the hand-over, a job of another name is none of the reconciler's business
    other = Reconciler(a_spawner.slurm_client, owned=lambda: set(), interval=60, max_age=0)
    mock_slurm.set_job(job_id, state="RUNNING")
    assert [await other.run_once(), await other.run_once()] == [[], []]


async def test_the_reconciler_cancels_a_late_sbatch_and_retries_with_back_off(
    a_spawner_quick_to_give_up, mock_slurm, caplog
):
    a_spawner = a_spawner_quick_to_give_up
    mock_slurm.fail("sbatch", "late")  # sbatch times out, yet its job is queued
    a_spawner.apply_session_options({"gpus": 1})
    with pytest.raises(RuntimeError, match="not answering, so no session was started"):
        await a_spawner.start()
    [job_id] = mock_slurm.jobs()
    assert a_spawner.job_id == ""
    client: SlurmClient = a_spawner.slurm_client
    reconciler = Reconciler(client, owned=lambda: set(), interval=60, max_age=0)
    mock_slurm.fail("scancel", "unreachable")
    assert await reconciler.run_once() == []  # the first pass that finds it unowned only notes it
    assert mock_slurm.calls("scancel") == []
    assert await reconciler.run_once() == []  # the second cancels: Slurm does not answer
    assert await reconciler.run_once() == []  # backing off: not tried again at once
    assert len(mock_slurm.calls("scancel")) == 1
    mock_slurm.heal()
    reconciler._retry.clear()  # time passes
    assert await reconciler.run_once() == [job_id]
    assert mock_slurm.jobs()[job_id]["state"] == "CANCELLED"
    assert any(
        f"Job {job_id} of alice (PENDING) is a portal session job no session owns" in r.getMessage()
        for r in caplog.records
    )
    assert await reconciler.run_once() == []  # gone now: nothing more to do


async def test_the_reconciler_leaves_owned_jobs_and_users_mid_submit_alone(a_spawner, mock_slurm, a_web_server):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    client: SlurmClient = a_spawner.slurm_client
    reconciler = Reconciler(client, owned=lambda: {job_id}, interval=60, max_age=0)
    assert await reconciler.run_once() == []
    client.submitting["alice"] = 1
    assert await Reconciler(client, owned=lambda: set(), interval=60, max_age=0).run_once() == []
    client.submitting.clear()
    not_ready = Reconciler(client, owned=lambda: None, interval=60, max_age=0)  # the hub has no database yet
    assert await not_ready.run_once() == [] and not_ready.passes == 0
    assert mock_slurm.jobs()[job_id]["state"] == "RUNNING"


async def test_a_start_whose_sbatch_answers_while_the_reconciler_lists_is_not_an_orphan():
    """The scale rig's race: the listing takes seconds under load, and a start's sbatch answers meanwhile."""
    owned: set[str] = set()
    cancelled: list[str] = []

    class SlowListingClient:
        submitting = {"alice": 1}  # alice's sbatch is in flight when the pass begins

        @staticmethod
        async def named_jobs():
            return {"7"}  # asked first: job 7 is queued, its sbatch not answered yet

        class watcher:
            @staticmethod
            async def listing(max_age):
                await asyncio.sleep(0)
                owned.add("7")  # ... it answers, and the spawner saves job 7 in its state, in one step
                SlowListingClient.submitting = {}
                return {"7": JobInfo("7", "PENDING", user="alice")}

        @staticmethod
        async def cancel(user, job_id):
            cancelled.append(job_id)

    reconciler = Reconciler(SlowListingClient(), owned=lambda: set(owned), interval=60)
    assert await reconciler.run_once() == [] and cancelled == []


async def test_a_job_unowned_for_one_pass_only_is_left_alone(a_spawner, mock_slurm, a_web_server):
    """A start read between Slurm queueing its job and the hub learning the id: the next pass finds it owned."""
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    owned: set[str] = set()
    reconciler = Reconciler(a_spawner.slurm_client, owned=lambda: set(owned), interval=60, max_age=0)
    assert await reconciler.run_once() == []  # unowned once: noted
    owned.add(job_id)
    assert await reconciler.run_once() == []  # owned now
    owned.clear()
    assert await reconciler.run_once() == []  # unowned again: a first sighting again
    assert mock_slurm.calls("scancel") == [] and mock_slurm.jobs()[job_id]["state"] == "RUNNING"
    assert await reconciler.run_once() == [job_id]  # unowned at two passes in a row


async def test_an_sbatch_in_flight_at_every_other_check_does_not_keep_an_orphan_alive(
    a_spawner, mock_slurm, a_web_server
):
    """A hostile user who always has a submission under way when the reconciler looks: the orphan's first
    sighting is kept while the user is passed over, and the next check that may cancels it."""
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    client: SlurmClient = a_spawner.slurm_client
    reconciler = Reconciler(client, owned=lambda: set(), interval=60, max_age=0)
    assert await reconciler.run_once() == []  # first sighting
    client.submitting["alice"] = 1
    assert await reconciler.run_once() == []  # passed over: alice submits
    client.submitting.clear()
    assert await reconciler.run_once() == [job_id]  # still unowned since the first sighting


class LiveSpawner:
    def __init__(self, job_id: str, stopping: bool = False):
        self.job_id = job_id
        self.record = SessionRecord(job_id=job_id, stopping=stopping)
        self.user, self.name = SimpleNamespace(name=f"user{job_id}"), ""  # the log's "user12"
        self.saved = 0

    def save_state(self):
        self.saved += 1


def test_a_job_a_live_spawner_holds_is_owned_and_its_lost_record_saved_again(caplog):
    holding, handed_over, saved_already = LiveSpawner("12"), LiveSpawner("13", stopping=True), LiveSpawner("9")
    live = held_by([holding, handed_over, saved_already, LiveSpawner("")])
    assert live == {"12": holding, "9": saved_already}
    assert with_live({"9", "4"}, live) == {"4", "9", "12"}
    assert (holding.saved, saved_already.saved, handed_over.saved) == (1, 0, 0)
    assert "Job 12 of user12 is held by the hub but was missing from its database" in caplog.text


def test_the_spawner_keeps_jupyterhubs_own_state_properties():
    # the hub reads these everywhere (progress, home page, API); a same-named attribute would shadow them
    from jupyterhub.spawner import Spawner

    from spawner.hub.session.spawner import SlurmGPUSpawner

    for name in ("ready", "active", "pending", "_log_name"):
        assert getattr(SlurmGPUSpawner, name) is getattr(Spawner, name), name


async def test_an_end_the_user_did_not_ask_for_is_explained_until_the_next_start(a_spawner, mock_slurm, a_web_server):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    assert a_spawner.get_state()["limit"] == "8 h"
    mock_slurm.set_job(job_id, state="TIMEOUT")
    a_spawner.poll_max_age = 0
    assert await a_spawner.poll() == 1
    a_spawner.clear_state()
    assert a_spawner.get_state()["last_end"].startswith("Your session reached its time limit (8 h) at ")
    a_spawner.api_token = "alice-server-token"
    mock_slurm.purge(job_id)  # start_running walks the only job in the table
    await start_running(a_spawner, mock_slurm, a_web_server)
    assert "last_end" not in a_spawner.get_state()
    await a_spawner.stop()  # a stop the user asked for explains nothing
    a_spawner.clear_state()
    state = a_spawner.get_state()
    user = user_record(a_spawner).to_state()  # what is the user's (spawner/hub/session/userrecord.py)
    # the home page's list of recent sessions: both sessions, newest first, each with its end
    assert [(e["job_id"], e["why"].split(" at ")[0]) for e in user.pop("history")] == [
        (str(int(job_id) + 1), "Stopped through the portal"),
        (job_id, "Your session reached its time limit (8 h)"),
    ]
    # and the usage page's log: both sessions, their GPU-hours the hub's own (given GPUs x the time it saw them run)
    log = user.pop("usage_log")
    assert [(e["job_id"], e["accounted"]) for e in log] == [(str(int(job_id) + 1), False), (job_id, False)]
    assert [(e["gpus"], e["gpu_hours"] > 0) for e in log] == [(2, True), (2, True)], log
    assert user == {"version": 1}  # saved in the user's own row:
    assert UserRecord.from_state(a_spawner.user.db.get(UserRecordRow, a_spawner.user.orm_user.id).state) == (
        user_record(a_spawner)
    )
    assert state == {}  # and the session's record keeps nothing: its job has ended, the rest is the user's


async def test_a_restarted_hub_still_knows_the_sessions_token(
    a_spawner, mock_slurm, a_web_server, a_config_file, a_home
):
    """JupyterHub gives a restarted hub's spawner no API token; the session's port keeper still reports its end
    with it (spawner/hub/session/handlers.py), so the saved state keeps the token's digest."""
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    token = a_spawner.api_token
    assert token and a_spawner.holds_token(token)
    state = a_spawner.get_state()
    assert token not in json.dumps(state)  # the digest only
    restarted = restarted_spawner(a_spawner, state, a_config_file, a_home)
    assert restarted.api_token == ""
    assert restarted.holds_token(token)
    assert not restarted.holds_token("someone-elses-token") and not restarted.holds_token("")

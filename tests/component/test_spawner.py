"""The spawner's lifecycle against the mock Slurm (real subprocesses, fake scheduler)."""

from __future__ import annotations

import asyncio
import contextlib
import pwd
import time
from datetime import datetime, timedelta

import pytest
from batchspawner import JobStatus
from jupyterhub.spawner import SpawnException

from spawner.hub.request.refusal import SessionRefused
from spawner.hub.slurm.client import JobInfo, SlurmUnavailable
from spawner.hub.slurm.watcher import JobWatcher


async def until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def start_until_its_job_runs(spawner, mock, options: dict, node="127.0.0.1"):
    """Start a session and walk the mock job to running, its server not reported yet; return (start task, job id)."""
    spawner.apply_session_options(options)
    task = asyncio.ensure_future(spawner.start())
    await until(lambda: mock.jobs())
    job_id = next(iter(mock.jobs()))
    mock.set_job(job_id, state="RUNNING", node=node)
    await until(lambda: spawner.job_info is not None and spawner.job_info.running)
    return task, job_id


async def start_running(spawner, mock, jupyter, node="127.0.0.1"):
    """Start a session and walk the mock job to running; return (start result, job id)."""
    task, job_id = await start_until_its_job_runs(spawner, mock, {"gpus": 2, "hours": 8}, node)
    spawner.port = jupyter.port  # what the port callback does
    return await asyncio.wait_for(task, 10), job_id


async def test_start_submits_one_job_as_the_user_and_returns_node_and_port(a_spawner, mock_slurm, a_home, a_web_server):
    (ip, port), job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    assert (ip, port, a_spawner.job_id) == ("127.0.0.1", a_web_server.port, job_id)

    [sudo_call] = [c for c in mock_slurm.calls("sudo") if c["argv"][0].endswith("sbatch")]
    assert sudo_call["user"] == "alice"
    [sbatch] = mock_slurm.calls("sbatch")
    argv = sbatch["argv"]
    assert "--gres=gpu:2" in argv and "--cpus-per-task=16" in argv and "--mem=96G" in argv
    assert f"--output={a_home}/.dsportal-session-%j.log" in argv and f"--chdir={a_home}" in argv
    # the API token travels in the environment only
    assert sbatch["env"]["JUPYTERHUB_API_TOKEN"] == "alice-server-token"
    assert not any("alice-server-token" in a for a in argv + sudo_call["argv"])
    assert "alice-server-token" not in sbatch["script"]
    # sbatch passes on exactly what sudo hands it (named variables would run the login shell)
    assert "--export=ALL" in argv and {"JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "HOME", "USER"} <= set(
        sbatch["env"]
    )
    assert sbatch["env"]["HOME"] == str(a_home) and sbatch["env"]["USER"] == "alice"
    assert sbatch["env"]["JUPYTERHUB_API_URL"] == "http://10.0.0.1:8081/hub/api"
    assert "exec /opt/dsportal/venv/bin/dsportal-singleuser" in sbatch["script"]


def test_every_variable_jupyterhub_gives_a_job_is_one_sudo_keeps(a_spawner):
    # a JupyterHub upgrade that adds a variable the server needs must not lose it silently between hub and job
    from spawner.hub.request.jobspec import JOB_VARIABLES

    a_spawner.apply_session_options({"gpus": 1})
    given = {k for k in a_spawner.get_env() if k.startswith(("JUPYTERHUB_", "JPY_"))}
    assert given - set(JOB_VARIABLES) == set()
    assert set(a_spawner.job_environment()) <= set(JOB_VARIABLES)


async def test_a_start_stopped_while_sbatch_runs_has_its_job_cancelled_as_soon_as_sbatch_answers(a_spawner, mock_slurm):
    """The user presses Stop a moment after Start, while a busy slurmctld has not answered sbatch yet: the start is
    cancelled, sbatch finishes, and the job it made is cancelled then (before, sbatch's answer was lost with the
    start and the job held its GPUs until the reconciler's second check; CI saw it still there 20 s on)."""
    a_spawner.apply_session_options({"gpus": 1})
    mock_slurm.fail("sbatch", "slow")  # the job is queued at once, its id answered 2 s later
    start = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())  # queued by Slurm; sbatch has not answered
    start.cancel()  # what JupyterHub's stop API does with a start under way
    with pytest.raises(asyncio.CancelledError):
        await start
    assert a_spawner.job_id == ""  # the start never learnt its job
    await until(lambda: [j["state"] for j in mock_slurm.jobs().values()] == ["CANCELLED"], timeout=10)
    assert mock_slurm.calls("scancel")[-1]["user"] == "alice"  # as the user, as every cancel
    # Start and Stop in a loop cannot pile sbatch calls up: one more than the sessions she may start at once
    a_spawner.slurm_client.submitting["alice"] = a_spawner.settings.sessions.max_per_user + 1
    try:
        with pytest.raises(RuntimeError, match="Your earlier starts are still being submitted to Slurm"):
            await a_spawner.sbatch_or_cancel("alice", ["/bin/false"], "", {})
    finally:
        del a_spawner.slurm_client.submitting["alice"]


async def test_progress_says_what_slurm_says(a_spawner, mock_slurm, a_web_server):
    a_spawner.apply_session_options({"gpus": 1})
    assert a_spawner.progress_message() == "Submitting your session to Slurm..."
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())
    job_id = next(iter(mock_slurm.jobs()))
    mock_slurm.set_job(job_id, reason="Resources")
    await until(lambda: a_spawner.job_info is not None and a_spawner.job_info.reason == "Resources")
    assert a_spawner.progress_message() == (
        f"Job {job_id} is queued on sxm2: waiting for GPUs to become free "
        "(Resources). Slurm gives no start estimate yet."
    )
    mock_slurm.set_job(job_id, start="2026-11-22T11:05:00")
    await until(lambda: a_spawner.job_info.start)
    await a_spawner.update_queue_place()
    assert a_spawner.progress_message() == (
        f"Job {job_id} is queued on sxm2: waiting for GPUs to become free "
        "(Resources). It is 1st in line there. Slurm expects it to start at "
        "2026-11-22 11:05."
    )
    events = a_spawner.progress()
    assert (await events.__anext__())["message"].startswith(f"Job {job_id} is queued")
    mock_slurm.set_job(job_id, state="RUNNING", node="127.0.0.1", reason="None")
    await until(lambda: a_spawner.job_info.running)
    assert a_spawner.progress_message() == f"Job {job_id} is running on 127.0.0.1; starting JupyterLab..."
    # reported, but what listens there hangs up without an answer until it has loaded
    a_web_server.loaded.clear()
    a_spawner.port = a_web_server.port
    await until(lambda: a_spawner.progress_message() == "JupyterLab is loading on 127.0.0.1...")
    await until(lambda: len(a_web_server.asked) >= 3)  # the spawner asked three times and kept waiting
    assert not task.done()
    a_web_server.loaded.set()
    await asyncio.wait_for(task, 10)
    assert a_spawner.progress_message() == "JupyterLab is up on 127.0.0.1; connecting..."
    await events.aclose()


async def test_stop_cancels_as_the_user_and_waits_until_the_job_left_the_queue(a_spawner, mock_slurm, a_web_server):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    await a_spawner.stop()
    [scancel] = mock_slurm.calls("scancel")
    assert (scancel["argv"], scancel["user"]) == ([job_id], "alice")
    # the job went through COMPLETING; stop returned only once it had left
    assert mock_slurm.jobs()[job_id]["state"] == "CANCELLED"
    assert await a_spawner.poll() == 1


async def test_poll_notices_ended_failed_and_timed_out_jobs(a_spawner, mock_slurm, a_web_server):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    assert await a_spawner.poll() is None
    for state in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL"):
        mock_slurm.set_job(job_id, state=state)
        a_spawner.job_id = job_id
        assert await a_spawner.query_job_status() == JobStatus.NOTFOUND, state
    a_spawner.job_id = job_id
    assert await a_spawner.poll() == 1
    assert a_spawner.job_id == "" and a_spawner.get_state().get("job_id") is None


async def test_poll_notices_a_job_slurm_has_forgotten(a_spawner, mock_slurm, a_web_server):
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.purge(job_id)
    a_spawner.poll_max_age = 0  # the answer from the start is recent; ask again
    assert await a_spawner.poll() == 1


async def test_private_jobs_the_hub_cannot_see_keep_a_running_session(
    a_spawner, mock_slurm, a_web_server, caplog, monkeypatch
):
    """The admin turns on PrivateData=jobs (`scontrol reconfigure`) without giving the hub's account the rank to
    see through it: squeue, as the hub, now lists none of the users' jobs.  The running session is kept (its
    state unknown), the log tells the admin what to change, and once the hub may see the jobs again the same
    session is followed as before."""
    monkeypatch.setattr("spawner.hub.slurm.visibility.CHECK_SECONDS", 0.0)  # each question asked anew
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    a_spawner.poll_max_age = 0
    mock_slurm.set_job(job_id, end=(datetime.now() + timedelta(hours=1)).isoformat(timespec="seconds"))
    assert await a_spawner.poll() is None  # seen with its time limit an hour ahead
    mock_slurm.set_private("jobs,usage,users,accounts")
    assert await a_spawner.poll() is None
    assert a_spawner.job_id == job_id and a_spawner.job_hidden
    told = [r.getMessage() for r in caplog.records if "PrivateData" in r.getMessage()]
    assert told and "sacctmgr add coordinator account=ACCOUNTS names=" in told[0], told
    a_spawner.record.stopping = True  # a stop began: unlisted is not "gone" where Slurm hides the jobs
    assert not a_spawner._listed_gone()
    a_spawner.record.stopping = False
    mock_slurm.set_private("jobs,usage,users,accounts", "None|nlp,vision")  # a coordinator sees its accounts' jobs
    assert await a_spawner.poll() is None and not a_spawner.job_hidden
    mock_slurm.purge(job_id)  # and a job Slurm has really forgotten is gone again
    assert await a_spawner.poll() == 1


async def test_a_session_slurm_hides_is_ended_once_past_its_time_limit(a_spawner, mock_slurm, a_web_server):
    """Kept while it may run, never for ever: past its time limit (and a grace) a hidden job has ended, so a dead
    session's route does not outlive its job (a port keeper killed with its node cannot say it ended)."""
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    a_spawner.poll_max_age = 0
    mock_slurm.set_job(job_id, end=(datetime.now() - timedelta(minutes=6)).isoformat(timespec="seconds"))
    assert await a_spawner.poll() is None  # still listed: running past its end is Slurm's word, not the hub's
    mock_slurm.set_private("jobs")
    assert await a_spawner.poll() == 1


async def test_a_failed_privacy_question_does_not_keep_ended_sessions(a_spawner, mock_slurm, a_web_server, caplog):
    """slurmdbd down (sacctmgr fails) when a job leaves the listing: the last verdict (none hidden) stands, and
    the ended session is ended, not kept for ever as unknown."""
    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    mock_slurm.fail("sacctmgr", "error", "sacctmgr: error: Problem talking to the database: Connection refused")
    mock_slurm.purge(job_id)
    a_spawner.poll_max_age = 0
    assert await a_spawner.poll() == 1
    assert any("Could not ask Slurm what it keeps private" in r.getMessage() for r in caplog.records)


async def test_a_visible_queue_asks_slurm_nothing_more(a_spawner, mock_slurm, a_web_server):
    """Slurm's PrivateData is asked about only when a listing lacks a followed job: never while it is there."""
    await start_running(a_spawner, mock_slurm, a_web_server)
    a_spawner.poll_max_age = 0
    for _ in range(3):
        assert await a_spawner.poll() is None
    assert [c for c in mock_slurm.calls("sacctmgr") if c["what"] in ("config", "privilege")] == []


@pytest.mark.parametrize("mode", ["unreachable", "hang"])
async def test_a_slurm_outage_keeps_a_running_session(a_spawner_quick_to_give_up, mock_slurm, mode, a_web_server):
    spawner = a_spawner_quick_to_give_up
    _, job_id = await start_running(spawner, mock_slurm, a_web_server)
    mock_slurm.fail("squeue", mode)
    assert await spawner.query_job_status() == JobStatus.UNKNOWN
    assert spawner.job_id == job_id
    mock_slurm.heal()
    assert await spawner.poll() is None


@pytest.mark.parametrize(
    "mode, message",
    [
        ("unreachable", "The cluster's scheduler (Slurm) is not answering, so no session was started."),
        ("hang", "The cluster's scheduler (Slurm) is not answering, so no session was started."),
    ],
)
async def test_controller_down_while_starting_is_a_clear_error(a_spawner_quick_to_give_up, mock_slurm, mode, message):
    mock_slurm.fail("sbatch", mode)
    a_spawner_quick_to_give_up.apply_session_options({})
    with pytest.raises(RuntimeError) as info:
        await asyncio.wait_for(a_spawner_quick_to_give_up.start(), 15)
    assert str(info.value).startswith(message)
    assert mock_slurm.jobs() == {}


@pytest.mark.parametrize(
    ("reason", "why"),
    [
        ("AssocMaxGRESPerJob", "it asks for more than one job may have under its Slurm account or QOS"),
        ("QOSMaxWallDurationPerJobLimit", "it asks for more than one job may have under its Slurm account or QOS"),
        ("AssocGrpGRESMinutes", "its Slurm account's allocation is used up"),
    ],
)
async def test_a_job_slurm_holds_for_a_limit_waiting_cannot_clear_fails_its_start_with_words(
    a_spawner, mock_slurm, reason, why
):
    """A per-job limit of the account or QOS, or an allocation used up: the job would wait until start_timeout (15
    min) with nothing to wait for. The start fails at once, says why, and its job is cancelled."""
    a_spawner.apply_session_options({"gpus": 4})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())
    job_id = next(iter(mock_slurm.jobs()))
    mock_slurm.set_job(job_id, reason=reason)
    with pytest.raises(SessionRefused) as info:
        await asyncio.wait_for(task, 10)
    assert info.value.jupyterhub_message.startswith(
        f"Slurm will not start your session (job {job_id}): {why} ({reason})."
    )
    await a_spawner.stop()  # what JupyterHub does after a failed start
    assert mock_slurm.jobs()[job_id]["state"] == "CANCELLED"


async def test_a_job_waiting_for_a_limit_that_clears_keeps_waiting(a_spawner, mock_slurm):
    a_spawner.apply_session_options({"gpus": 1})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())
    job_id = next(iter(mock_slurm.jobs()))
    mock_slurm.set_job(job_id, reason="AssocGrpGRESRunMinutes")  # clears as the account's running jobs go on
    await until(lambda: a_spawner.job_info is not None and a_spawner.job_info.reason == "AssocGrpGRESRunMinutes")
    await asyncio.sleep(0.3)
    assert not task.done()
    task.cancel()
    await a_spawner.stop()


async def test_slurm_refusal_is_shown_with_its_stderr(a_spawner, mock_slurm):
    mock_slurm.fail(
        "sbatch",
        "error",
        "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
    )
    a_spawner.apply_session_options({})
    with pytest.raises(RuntimeError, match="Slurm refused the session: sbatch: error: .*Invalid account"):
        await a_spawner.start()


async def test_squeue_down_while_starting_is_a_clear_error(a_spawner, mock_slurm):
    a_spawner.apply_session_options({})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())
    mock_slurm.fail("squeue", "unreachable")
    with pytest.raises(RuntimeError, match="Slurm stopped answering while your session .* was starting"):
        await asyncio.wait_for(task, 10)


@pytest.mark.parametrize("running_first", [False, True])
async def test_job_dying_before_jupyter_starts_shows_the_log_tail(a_spawner, mock_slurm, a_home, running_first):
    a_spawner.apply_session_options({})
    task = asyncio.ensure_future(a_spawner.start())
    await until(lambda: mock_slurm.jobs())
    job_id = next(iter(mock_slurm.jobs()))
    (a_home / f".dsportal-session-{job_id}.log").write_text(
        "".join(f"line {i}\n" for i in range(40)) + "ModuleNotFoundError: No module named 'jupyterhub'\n"
    )
    if running_first:
        mock_slurm.set_job(job_id, state="RUNNING", node="node001")
        await until(lambda: a_spawner.job_info is not None and a_spawner.job_info.running)
    mock_slurm.set_job(job_id, state="FAILED", reason="NonZeroExitCode")
    with pytest.raises(RuntimeError) as info:
        await asyncio.wait_for(task, 10)
    message = str(info.value)
    assert message.startswith(f"Your session job {job_id} ended before JupyterLab started (failed, NonZeroExitCode).")
    assert message.endswith("line 39\nModuleNotFoundError: No module named 'jupyterhub'")
    assert "line 20" not in message  # only the tail
    [tail] = [c for c in mock_slurm.calls("sudo") if c["argv"][0] == "tail"]
    assert tail["user"] == "alice"  # read as the user, not as root


@pytest.mark.parametrize("port_reported", [False, True])
async def test_a_server_that_exits_while_starting_fails_the_start_at_once_with_the_logs_last_lines(
    a_spawner, mock_slurm, a_home, a_web_server, port_reported
):
    # The port keeper holds the port and its job runs on, RUNNING to Slurm: only its report says the server exited.
    task, job_id = await start_until_its_job_runs(a_spawner, mock_slurm, {"gpus": 1})
    if port_reported:  # it listened and reported its port, then died before it could prove itself
        a_web_server.loaded.clear()
        a_spawner.port = a_web_server.port
        await until(lambda: len(a_web_server.asked) >= 2)
    (a_home / f".dsportal-session-{job_id}.log").write_text(
        "dsportal: prepared\n[I LabApp] loading\n"
        "dsportal: the session's server has exited (140); the port stays held until the hub stops routing to it\n"
    )
    exited = time.monotonic()
    a_spawner.server_exited_while_starting()  # what the hub's ended report does (spawner/hub/session/handlers.py)
    with pytest.raises(RuntimeError) as info:
        await asyncio.wait_for(task, 30)  # before: only start_timeout (15 min) or the job's end ended the wait
    assert time.monotonic() - exited < 3
    assert str(info.value) == (
        f"JupyterLab exited while your session (job {job_id}) was starting; its job is cancelled. "
        f"Last lines of {a_home}/.dsportal-session-{job_id}.log:\n"
        "dsportal: prepared\n[I LabApp] loading\n"
        "dsportal: the session's server has exited (140); the port stays held until the hub stops routing to it"
    )
    # JupyterHub's cleanup of a failed start: the normal stop, which cancels the job as the user
    await a_spawner.stop()
    [scancel] = mock_slurm.calls("scancel")
    assert (scancel["argv"], scancel["user"]) == ([job_id], "alice")
    assert a_spawner.record.last_end.startswith("Your session's server exited while it started at ")
    assert a_spawner.record.last_end.endswith(
        f"; its job (job {job_id}) was cancelled. Its log: ~/.dsportal-session-{job_id}.log."
    )


async def test_refused_options_are_a_400_and_submit_nothing(a_spawner, mock_slurm):
    with pytest.raises(SpawnException) as info:
        a_spawner.apply_session_options({"gpus": 5})
    assert info.value.status_code == 400
    assert info.value.jupyterhub_message.startswith("gpus: 5 is out of range")
    assert mock_slurm.calls() == []


async def test_apply_user_options_hook_is_wired(a_spawner):
    await a_spawner.apply_user_options(a_spawner, {"partition": "pcie", "gpus": 2, "hours": 3})
    assert (a_spawner.resources.partition, a_spawner.resources.gpus, a_spawner.resources.minutes) == ("pcie", 2, 180)


async def test_hub_restart_keeps_the_session(a_spawner, mock_slurm, a_config_file, a_home, a_web_server):
    from spawner.hub.session.spawner import SlurmGPUSpawner
    from tests.support.mockslurm import fake_passwd

    _, job_id = await start_running(a_spawner, mock_slurm, a_web_server)
    state = a_spawner.get_state()
    assert state["job_id"] == job_id and state["job_status"] == "RUNNING||127.0.0.1"
    restarted = SlurmGPUSpawner(user=a_spawner.user, hub=a_spawner.hub, config_file=str(a_config_file))
    restarted.getpwnam = lambda name: fake_passwd(name, a_home)
    restarted.load_state(state)
    assert restarted.job_id == job_id and restarted.state_gethost() == "127.0.0.1"
    assert await restarted.poll() is None
    await restarted.stop()
    assert mock_slurm.jobs()[job_id]["state"] == "CANCELLED"


async def test_unknown_account_is_refused(a_spawner, mock_slurm):
    def no_such_user(name):
        raise KeyError(name)

    a_spawner.getpwnam = no_such_user
    with pytest.raises(SpawnException, match="There is no cluster account 'alice'") as info:
        a_spawner.apply_session_options({})
    assert info.value.status_code == 403
    assert mock_slurm.calls() == []


@pytest.mark.parametrize("name, uid", [("root", 0), ("daemon", 1), ("dsportal", 999)])
async def test_root_and_system_accounts_are_refused_before_anything_is_submitted(
    a_spawner, mock_slurm, a_home, name, uid
):
    a_spawner.user.name = name
    a_spawner.getpwnam = lambda n: pwd.struct_passwd((n, "x", uid, uid, n, str(a_home), "/bin/bash"))
    with pytest.raises(SpawnException) as info:
        a_spawner.apply_session_options({})
    assert info.value.status_code == 403
    assert info.value.jupyterhub_message.startswith(f"The account {name!r} cannot run sessions here")
    with pytest.raises(SpawnException):
        await a_spawner.start()  # a direct start, without the options step, is refused the same way
    assert mock_slurm.calls() == []


async def test_a_directory_uid_that_is_not_the_unix_uid_is_refused(a_spawner, mock_slurm):
    async def auth_state():
        return {"uid": "alice", "uidNumber": 0, "gidNumber": 0}

    a_spawner.user.get_auth_state = auth_state
    a_spawner.apply_session_options({})
    with pytest.raises(SpawnException, match=r"is not the directory's 'alice' \(uidNumber 0\)") as info:
        await a_spawner.start()
    assert info.value.status_code == 403
    assert mock_slurm.calls() == []


async def test_watcher_shares_one_squeue_call_between_concurrent_sessions():
    calls = []

    async def query():
        calls.append(time.monotonic())
        await asyncio.sleep(0.01)
        return {i: JobInfo(i, "RUNNING", "", "node001", "alice") for i in ("1", "2", "4", "5")}

    watcher = JobWatcher(query)
    results = await asyncio.gather(*(watcher.status(str(i)) for i in range(1, 6)))
    assert len(calls) == 1
    assert [r.job_id if r else None for r in results] == ["1", "2", None, "4", "5"]  # 3 is absent: gone
    # a recent answer is reused when allowed, not otherwise
    assert (await watcher.status("1", max_age=60)).running and len(calls) == 1
    await watcher.status("1")
    assert len(calls) == 2


async def test_a_fresh_question_never_gets_a_listing_that_was_already_under_way():
    # A job submitted while a listing runs is not in it: "absent" would read as "gone".
    release = asyncio.Event()
    answers = [{}, {"7": JobInfo("7", "PENDING", "", "", "alice")}]

    async def query():
        answer = answers.pop(0)
        if answer == {}:
            await release.wait()
        return answer

    watcher = JobWatcher(query)
    early = asyncio.ensure_future(watcher.listing())
    await asyncio.sleep(0.01)  # that listing's query is under way
    late = asyncio.ensure_future(watcher.status("7"))  # asked after job 7 was submitted
    release.set()
    assert await early == {}
    assert (await late).pending


async def test_watcher_hands_errors_to_every_waiter():
    async def query():
        raise SlurmUnavailable(["squeue"], 1, "Unable to contact slurm controller")

    watcher = JobWatcher(query)
    results = await asyncio.gather(watcher.status("1"), watcher.status("2"), return_exceptions=True)
    assert [type(r) for r in results] == [SlurmUnavailable, SlurmUnavailable]


async def test_a_cancelled_caller_leaves_the_listing_running_and_settled_waits_for_it():
    release = asyncio.Event()

    async def query():
        await release.wait()
        return {}

    watcher = JobWatcher(query)
    caller = asyncio.ensure_future(watcher.status("1"))
    await until(lambda: watcher.calls == 1)
    caller.cancel()
    settling = asyncio.ensure_future(watcher.settled())
    await asyncio.sleep(0.05)
    assert caller.cancelled() and not settling.done()  # the query runs on for the other callers
    release.set()
    await asyncio.wait_for(settling, 5)
    assert watcher.listed()


async def test_only_the_sessions_own_server_counts_as_ready(a_spawner, mock_slurm, a_web_server):
    """Something else on the reported port (another account's server on a shared node) is never taken for it."""
    impostor = a_web_server
    impostor.token = "not-the-session-token"  # it answers HTTP, but cannot prove it is alice's session
    task, job_id = await start_until_its_job_runs(a_spawner, mock_slurm, {"gpus": 1})
    a_spawner.port = impostor.port
    await until(lambda: len(impostor.asked) >= 5)  # asked again and again: its answers do not count
    assert not task.done() and not a_spawner.answering
    assert a_spawner.progress_message() == "JupyterLab is loading on 127.0.0.1..."
    task.cancel()  # JupyterHub's start_timeout ends such a start with an error the user sees
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await a_spawner.slurm_client.watcher.settled()  # no command left starting when the test's loop closes


@pytest.mark.parametrize("waited, age", [(1, 0.05), (15, 2.0), (60, 6.0), (3600, 15.0)])
async def test_a_queued_start_reads_older_listings_the_longer_it_waits(a_spawner, waited, age):
    """A queue of starts costs one squeue per 15 s at most, whatever its length (the scale benchmark's finding)."""
    assert a_spawner._start_listing_age() == 0.0  # before its job is first seen: only a fresh listing
    a_spawner.job_info = JobInfo("100", "PENDING", "Resources")
    a_spawner._submitted_at = asyncio.get_running_loop().time() - waited
    assert a_spawner._start_listing_age() == pytest.approx(age)


async def test_a_hub_without_the_portals_routes_starts_nothing(a_spawner, mock_slurm, monkeypatch):
    from jupyterhub import apihandlers

    from spawner.hub.session import handlers as portapi

    # a hub config that never called apply_portal_config: no port callback, batchspawner's handler served
    bare = [route for route in apihandlers.default_handlers if route[1] is not portapi.PortHandler]
    monkeypatch.setattr(apihandlers, "default_handlers", bare)
    a_spawner.apply_session_options({"gpus": 1})
    with pytest.raises(RuntimeError, match="not set up for DS Portal sessions"):
        await a_spawner.start()
    assert mock_slurm.calls("sbatch") == []

"""The admin's limits on one user's sessions hold when the user's starts race (real hub, mock Slurm).

A user who sends five starts at the same moment must not get past sessions.max_per_user or
sessions.max_gpus_per_user: the check and the submission are one step per user.  (Before the fix every
start's check counted only sessions whose sbatch had answered, so all five 4-GPU starts passed it and
alice held 20 GPUs with a limit of 4.)
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.http import wait_until
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data

MAX_SESSIONS, MAX_GPUS = 3, 4
IN_QUEUE = ("PENDING", "RUNNING", "COMPLETING")
LATE = 10  # seconds before this hub calls a Slurm command hung: the late sbatch's test waits as long (idle: 0.12 s)


@pytest.fixture(scope="module")
def a_limited_hub(tmp_path_factory):
    """A real hub with the mock Slurm, at most 3 sessions and 4 GPUs per user."""
    root = tmp_path_factory.mktemp("hub")
    mock = MockSlurm(root / "mockslurm")
    portal = config_data(mock)
    portal["sessions"] = {"max_per_user": MAX_SESSIONS, "max_gpus_per_user": MAX_GPUS}
    portal["slurm"]["reconcile_seconds"] = 3600  # the tests end a job left behind themselves, as Slurm would
    portal["slurm"]["command_timeout"] = LATE  # the late sbatch's start fails after this long
    # a refusal that comes after the start's squeue (the mock's are slow Python processes) still answers the POST
    hub = HubProcess(root, portal, after='c.JupyterHub.tornado_settings.update({"slow_spawn_timeout": 5})')
    hub.start()
    yield hub, mock
    hub.stop()


def held_by(mock: MockSlurm, user: str) -> list[dict]:
    """The user's jobs that hold or wait for resources, as the (mock) Slurm lists them."""
    return [j for j in mock.jobs().values() if j["user"] == user and j["state"] in IN_QUEUE]


def gpus_of(job: dict) -> int:
    return int(job["options"].get("gres", "gpu:0").rsplit(":", 1)[1])


def race(hub: HubProcess, user: str, names: list[str], options: dict) -> dict[str, tuple[int, dict]]:
    """Start every named session at the same moment (one thread each, released together)."""
    gate = threading.Barrier(len(names))

    def start(name: str):
        gate.wait()
        return name, hub.api("POST", f"/users/{user}/servers/{name}", options)

    with ThreadPoolExecutor(len(names)) as pool:
        return dict(pool.map(start, names))


def kept_sessions(hub: HubProcess, user: str) -> set[str]:
    return set(hub.api("GET", f"/users/{user}?include_stopped_servers=1")[1].get("servers", {})) - {""}


def accepted(hub: HubProcess, user: str, name: str) -> bool:
    """Whether a 4-GPU start of `name` is accepted now."""
    status, _ = hub.api("POST", f"/users/{user}/servers/{name}", {"gpus": 4, "hours": 1})
    return status in (201, 202)


def stop_all(hub: HubProcess, mock: MockSlurm, user: str) -> None:
    """Every session of `user` stopped and removed, and its job gone: a stop the hub refused or could not finish
    yet (a start still pending, a start's check of the same session: 409, "stop it again") is asked again every
    2 s, as a user would, until 120 s have passed (CI runs these tests at a low CPU priority beside others)."""
    asked: dict[str, float] = {}

    def gone() -> bool:
        kept = hub.api("GET", f"/users/{user}?include_stopped_servers=1")[1].get("servers", {})
        kept.pop("", None)
        for name, server in kept.items():
            # one that is stopping already is removed when its stop ends (JupyterHub's own removal, asked once)
            if server.get("pending") != "stop" and time.monotonic() - asked.get(name, 0.0) >= 2:
                asked[name] = time.monotonic()
                hub.api("DELETE", f"/users/{user}/servers/{name}", {"remove": True})
        return not kept and not held_by(mock, user)

    wait_until(gone, 120, f"{user}'s sessions removed", every=0.2)


@pytest.mark.parametrize(
    ("user", "options", "most", "words"),
    [
        ("alice", {"gpus": 4, "hours": 1}, 1, f"sessions.max_gpus_per_user is {MAX_GPUS} here"),
        ("bob", {"gpus": 0, "hours": 1}, MAX_SESSIONS, f"the most one user may run at once here ({MAX_SESSIONS})"),
    ],
)
def test_five_simultaneous_starts_stay_within_the_users_limits(a_limited_hub, user, options, most, words):
    hub, mock = a_limited_hub
    names = [f"race-{i}" for i in range(5)]
    try:
        answers = race(hub, user, names, options)
        accepted = {n for n, (status, _) in answers.items() if status in (201, 202)}
        refused = {n: body for n, (status, body) in answers.items() if status not in (201, 202)}
        # each refusal in words, as a 400 with the limit it would pass
        assert all(answers[n][0] == 400 and words in body["message"] for n, body in refused.items()), answers
        assert len(accepted) == most, answers
        jobs = wait_until(lambda: len(held_by(mock, user)) == most and held_by(mock, user), 30, "the accepted jobs")
        assert len(jobs) == most and sum(gpus_of(j) for j in jobs) <= MAX_GPUS, jobs
        # a refused name leaves no stopped session behind
        wait_until(lambda: kept_sessions(hub, user) == accepted, 30, f"only {sorted(accepted)} kept")
        # a later start, once nothing races, is refused the same way (the accepted ones still count)
        status, body = hub.api("POST", f"/users/{user}/servers/later", options)
        assert status == 400 and words in body["message"], (status, body)
    finally:
        stop_all(hub, mock, user)


def test_a_refused_or_failed_start_frees_its_share_at_once(a_limited_hub):
    """What a start holds while it checks and submits is freed when it fails: a start Slurm refuses leaves the
    user's whole allowance to the next one."""
    hub, mock = a_limited_hub
    try:
        mock.fail("sbatch", "error", "sbatch: error: Batch job submission failed: Invalid account")
        status, _ = hub.api("POST", "/users/alice/servers/first", {"gpus": 4, "hours": 1})
        assert status in (201, 202, 500), status
        wait_until(lambda: not hub.api("GET", "/users/alice")[1]["servers"].get("first"), 30, "the failed start over")
        mock.heal()
        status, body = hub.api("POST", "/users/alice/servers/second", {"gpus": 4, "hours": 1})
        assert status in (201, 202), body
        wait_until(lambda: len(held_by(mock, "alice")) == 1, 30, "the second start's job")
    finally:
        mock.heal()
        stop_all(hub, mock, "alice")


def test_a_session_being_stopped_counts_until_slurm_lets_its_job_go(a_limited_hub):
    """Stop, then start at once: while Slurm still holds the stopped session's job (scancel refused here), its
    GPUs are still the user's, so a second 4-GPU start is refused; once the job is gone it is accepted.  (Before,
    a session counted no more from the moment its stop was asked for: alice held 8 GPUs with a limit of 4.)"""
    hub, mock = a_limited_hub
    try:
        status, body = hub.api("POST", "/users/alice/servers/first", {"gpus": 4, "hours": 1})
        assert status in (201, 202), body
        wait_until(lambda: held_by(mock, "alice"), 30, "the first session's job")
        mock.fail("scancel", "error", "scancel: error: Slurm is busy")
        cancels = len(mock.calls("scancel"))
        hub.api("DELETE", "/users/alice/servers/first")
        wait_until(lambda: len(mock.calls("scancel")) > cancels, 30, "the stop's first scancel")
        status, body = hub.api("POST", "/users/alice/servers/second", {"gpus": 4, "hours": 1})
        assert status == 400 and f"sessions.max_gpus_per_user is {MAX_GPUS} here" in body["message"], (status, body)
        assert [gpus_of(j) for j in held_by(mock, "alice")] == [4]
        mock.heal()
        wait_until(lambda: not held_by(mock, "alice"), 60, "the first session's job cancelled")
        wait_until(lambda: accepted(hub, "alice", "second"), 30, "the second start accepted once the first job is gone")
    finally:
        mock.heal()
        stop_all(hub, mock, "alice")


def test_a_job_slurm_queued_for_a_start_that_timed_out_counts_until_it_is_gone(a_limited_hub):
    """slurmctld answered a start's sbatch too late: the start failed, but Slurm queued its job all the same, and
    it is alice's until the reconciler cancels it.  A start meanwhile counts it: a second 4-GPU start is refused
    with words that name the job; once Slurm lets it go, the start is accepted.  (Before, the limits counted only
    the sessions the hub tracks: the second start passed and alice held 8 GPUs with a limit of 4; the soak saw a
    user hold 4 sessions with a limit of 3 for 6 s after slurmctld came back.)"""
    hub, mock = a_limited_hub
    try:
        mock.fail("sbatch", "late")  # the job is queued, the answer never comes (the hub waits LATE s)
        status, _ = hub.api("POST", "/users/alice/servers/first", {"gpus": 4, "hours": 1})
        assert status in (201, 202, 500), status
        wait_until(
            lambda: not hub.api("GET", "/users/alice")[1]["servers"].get("first"), LATE + 30, "the failed start over"
        )
        left = held_by(mock, "alice")
        assert [gpus_of(j) for j in left] == [4], left  # Slurm holds it, the hub does not know its id
        (job_id,) = [j for j, job in mock.jobs().items() if job in left]
        mock.heal()
        status, body = hub.api("POST", "/users/alice/servers/second", {"gpus": 4, "hours": 1})
        assert status == 400, (status, body)
        assert f"sessions.max_gpus_per_user is {MAX_GPUS} here" in body["message"], body
        assert f"Slurm still holds job {job_id} of a start that failed" in body["message"], body
        assert [gpus_of(j) for j in held_by(mock, "alice")] == [4]
        mock.set_job(job_id, state="CANCELLED")  # as the reconciler's scancel leaves it
        wait_until(lambda: accepted(hub, "alice", "second"), 30, "the second start accepted once the job is gone")
    finally:
        mock.heal()
        stop_all(hub, mock, "alice")


def test_a_start_is_refused_with_words_when_slurm_cannot_list_the_users_jobs(a_limited_hub):
    """What Slurm holds for the user cannot be counted while it does not answer: the start is refused (503, in
    words), and nothing is submitted."""
    hub, mock = a_limited_hub
    try:
        mock.fail("squeue", "unreachable")
        submitted = len(mock.calls("sbatch"))
        status, body = hub.api("POST", "/users/alice/servers/first", {"gpus": 1, "hours": 1})
        if status == 202:  # answered before the start failed: its progress says why
            wait_until(lambda: not hub.api("GET", "/users/alice")[1]["servers"].get("first"), 30, "the start over")
        else:
            assert status == 503, (status, body)
            assert "The cluster's scheduler (Slurm) is not answering, so no session was started." in body["message"]
        assert len(mock.calls("sbatch")) == submitted
    finally:
        mock.heal()
        stop_all(hub, mock, "alice")

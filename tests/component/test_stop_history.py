"""A session whose stop is under way when the hub restarts is in its user's history, once (real hub, mock Slurm).

A stop marks the session's job "stopping", then retries scancel and waits for Slurm up to `slurm.stop_timeout`.  A
hub that restarts meanwhile hands the job to its reconciler, which cancels it; the history entry was written only
at the end of the stop, so the restarted hub never wrote it (seen in the soak: a session stopped 6 s before a hub
restart never appeared in GET /hub/api/dsportal/session).
"""

from __future__ import annotations

import threading

from tests.support.http import wait_until
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data


def history_of(hub: HubProcess, user: str, job_id: str) -> list[dict]:
    """The entries of `job_id` in `user`'s history, as the home page reads it (the user's own token)."""
    status, mine = hub.api("POST", f"/users/{user}/tokens", {"note": "home page"})
    assert status == 201, mine
    status, answer = hub.api("GET", "/dsportal/session", token=mine["token"])
    assert status == 200, answer
    return [entry for entry in answer["history"] if entry["job_id"] == job_id]


def stop_answered_or_not(hub: HubProcess, user: str) -> None:
    """Ask for a stop whose answer the hub may not live to give."""
    try:
        hub.api("DELETE", f"/users/{user}/server")
    except OSError:  # the connection closed by the hub's restart
        pass


def test_a_stop_under_way_when_the_hub_restarts_is_in_the_history_once(tmp_path, a_web_server):
    mock = MockSlurm(tmp_path / "mockslurm")
    portal = config_data(mock)
    portal["slurm"].update(stop_timeout=60, reconcile_seconds=5)
    hub = HubProcess(tmp_path, portal)
    hub.start()
    try:
        assert hub.api("POST", "/users/alice/server", {"gpus": 1, "hours": 1})[0] in (201, 202)
        job_id = wait_until(lambda: next(iter(mock.jobs()), None), what="alice's job submitted")
        token = mock.calls("sbatch")[-1]["env"]["JUPYTERHUB_API_TOKEN"]
        mock.set_job(job_id, state="RUNNING", node="127.0.0.1")
        a_web_server.token = token
        assert hub.request("POST", f"{hub.hub_api}/dsportal/port", {"port": a_web_server.port}, token=token)[0] == 201
        wait_until(lambda: hub.api("GET", "/users/alice")[1]["servers"][""]["ready"], what="alice's session ready")

        mock.fail("scancel", "unreachable")  # the stop retries scancel for up to stop_timeout (60 s)
        threading.Thread(target=stop_answered_or_not, args=(hub, "alice"), daemon=True).start()
        wait_until(lambda: mock.calls("scancel"), what="the stop's first scancel")
        hub.stop()  # the hub restarts 'mid-stop', as supervisorctl restart does (SIGTERM)
        mock.heal()
        hub.start()

        [entry] = history_of(hub, "alice", job_id)  # in the history from the restarted hub's first answer
        assert entry["why"].startswith("Stopped through the portal")
        # the restarted hub's reconciler ends the job it was handed; the history keeps one entry of it
        wait_until(lambda: mock.jobs()[job_id]["state"] == "CANCELLED", timeout=60, what="the job cancelled")
        assert [e["why"] for e in history_of(hub, "alice", job_id)] == [entry["why"]]
        assert not hub.api("GET", "/users/alice")[1]["servers"]
    finally:
        hub.stop()

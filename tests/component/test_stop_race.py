"""Stopping a session whose start is being interrupted while the session itself reports its end (real hub, mock
Slurm).

JupyterHub's DELETE of a starting server cancels the start, waits a second, then stops the server.  A session
whose start is cancelled exits and reports its end; the hub then begins the stop itself, and JupyterHub's
handler, finding a stop already pending, raised ("carol pending stop") and answered 500 (seen in CI); or, the stop
done within that second, raised on the spawner it had forgotten (KeyError, a 500 too).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.http import wait_until
from tests.support.hub import hub_with_mock_slurm

# JupyterHub's DELETE handler waits 1 s between cancelling the start and stopping; the end report must land in
# that second, which a loaded 2-core machine can miss.  This module's hub waits 10 s there instead: the same
# race, with room to perform it every time.
LONGER_WAIT = """
import asyncio as _asyncio, types as _types
import jupyterhub.apihandlers.users as _users


async def _sleep(delay, *args, **kw):
    return await _asyncio.sleep(10 if delay == 1 else delay, *args, **kw)


_users.asyncio = _types.SimpleNamespace(**{**vars(_asyncio), "sleep": _sleep})
"""


@pytest.fixture(scope="module")
def a_hub_and_its_slurm(tmp_path_factory):
    """The shared fixture's hub and mock Slurm, with JupyterHub's wait in a stop of a starting server at 10 s."""
    with hub_with_mock_slurm(tmp_path_factory.mktemp("hub"), after=LONGER_WAIT) as hub_and_slurm:
        yield hub_and_slurm


@pytest.mark.parametrize(("user", "job_ends_by_itself"), [("carol", False), ("bob", True)])
def test_a_stop_that_meets_the_sessions_own_end_report_is_a_202_not_a_500(
    a_hub_and_its_slurm, a_web_server, user, job_ends_by_itself
):
    hub, mock = a_hub_and_its_slurm
    assert hub.api("POST", f"/users/{user}/server", {"gpus": 1, "hours": 1})[0] in (201, 202)
    job_id = wait_until(
        lambda: next((i for i, j in mock.jobs().items() if j["user"] == user and j["state"] == "PENDING"), None),
        what="the job submitted",
    )
    token = [c for c in mock.calls("sbatch") if c["env"].get("USER") == user][-1]["env"]["JUPYTERHUB_API_TOKEN"]
    mock.set_job(job_id, state="RUNNING", node="127.0.0.1")
    a_web_server.token = token
    a_web_server.loaded.clear()  # JupyterLab is not ready yet: the start waits for its readiness proof
    try:
        assert hub.request("POST", f"{hub.hub_api}/dsportal/port", {"port": a_web_server.port}, token=token)[0] == 201

        stopped: dict = {}

        def stop() -> None:
            stopped["status"] = hub.api("DELETE", f"/users/{user}/server")[0]
            stopped["at"] = time.monotonic()

        stopping = threading.Thread(target=stop)
        stopping.start()
        # the start is cancelled: the server (held by JupyterHub for the second its handler waits) looks ready
        wait_until(
            lambda: hub.api("GET", f"/users/{user}")[1]["servers"].get("", {}).get("ready"), what="the start cancelled"
        )
        if job_ends_by_itself:  # the server's exit ended its job at once: the report's stop is done within the wait
            mock.set_job(job_id, state="COMPLETED")
        reported = time.monotonic()
        ended = hub.request("POST", f"{hub.hub_api}/dsportal/ended", {}, token=token)[0]  # the session exited
        stopping.join(60)
        assert reported < stopped["at"]  # the end report came while JupyterHub's handler still waited
        assert ended == 200
        # the stop already under way (202), or done within JupyterHub's wait (204): what was asked is being done
        assert stopped["status"] == (204 if job_ends_by_itself else 202)
    finally:
        a_web_server.loaded.set()
    wait_until(lambda: not hub.api("GET", f"/users/{user}")[1]["servers"], timeout=60, what="the session stopped")
    assert mock.jobs()[job_id]["state"] == ("COMPLETED" if job_ends_by_itself else "CANCELLED")

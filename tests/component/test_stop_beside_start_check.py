"""A stop that meets a start request's check of the same running session (real hub, mock Slurm).

JupyterHub's start of a running session checks it first (a poll), with a start marked pending meanwhile.  A stop
of that session whose own check ended during that one found the mark, and JupyterHub's stop raised ("pending
spawn"): a 500, seen in CI's soak when Slurm was slow and an idle culler's stop met the user's start.  This
module's hub marks the start pending (for 3 s, as a start request's check would) right after a stop's own check.
"""

from __future__ import annotations

import pytest

from tests.support.http import wait_until
from tests.support.hub import hub_with_mock_slurm

START_CHECK_BESIDE_THE_STOP = """
import asyncio as _asyncio
from jupyterhub.apihandlers.users import UserServerAPIHandler as _Handler
from jupyterhub.spawner import Spawner as _Spawner

_delete, _poll = _Handler.delete, _Spawner.poll_and_notify


async def _armed_delete(self, user_name, server_name=""):
    user = self.find_user(user_name)
    if user is not None and server_name in user.spawners:
        user.spawners[server_name]._start_check_beside = True
    return await _delete(self, user_name, server_name)


async def _poll_then_a_start_check(self):
    status = await _poll(self)
    if getattr(self, "_start_check_beside", False):
        self._start_check_beside = False
        self._spawn_pending = True  # a start request checks the running session (JupyterHub's POST)
        _asyncio.get_running_loop().call_later(3, setattr, self, "_spawn_pending", False)
    return status


_Handler.delete, _Spawner.poll_and_notify = _armed_delete, _poll_then_a_start_check
"""


@pytest.fixture(scope="module")
def a_hub_and_its_slurm(tmp_path_factory):
    """The shared fixture's hub and mock Slurm, with a start request's check beside each stop."""
    with hub_with_mock_slurm(tmp_path_factory.mktemp("hub"), after=START_CHECK_BESIDE_THE_STOP) as hub_and_slurm:
        yield hub_and_slurm


def test_a_stop_beside_a_start_check_is_a_409_with_words_and_the_next_stop_stops(a_hub_and_its_slurm, a_web_server):
    hub, mock = a_hub_and_its_slurm
    assert hub.api("POST", "/users/bob/server", {"gpus": 1, "hours": 1})[0] in (201, 202)
    job_id = wait_until(
        lambda: next((i for i, j in mock.jobs().items() if j["user"] == "bob"), None), what="the job submitted"
    )
    token = [c for c in mock.calls("sbatch") if c["env"].get("USER") == "bob"][-1]["env"]["JUPYTERHUB_API_TOKEN"]
    mock.set_job(job_id, state="RUNNING", node="127.0.0.1")
    a_web_server.token = token
    assert hub.request("POST", f"{hub.hub_api}/dsportal/port", {"port": a_web_server.port}, token=token)[0] == 201
    wait_until(lambda: hub.api("GET", "/users/bob")[1]["servers"].get("", {}).get("ready"), what="bob's session")

    status, body = hub.api("DELETE", "/users/bob/server")
    assert (status, body["message"]) == (
        409,
        "Your unnamed session is being checked by a start request sent at the same time, so it was not stopped; it is "
        "still running. Stop it again in a few seconds.",
    )
    assert mock.jobs()[job_id]["state"] == "RUNNING"
    # once the check is done, a stop stops (the next stop meets a check again: its words, until the mark clears)
    wait_until(lambda: hub.api("DELETE", "/users/bob/server")[0] in (202, 204), timeout=30, what="a stop that stops")
    wait_until(lambda: not hub.api("GET", "/users/bob")[1]["servers"], timeout=60, what="the session stopped")
    assert mock.jobs()[job_id]["state"] == "CANCELLED"

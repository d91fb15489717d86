"""A start stopped while its POST still waits is answered with words, not a 500 (real hub, mock Slurm).

JupyterHub's POST /hub/api/users/NAME/server waits up to `slow_spawn_timeout` (the portal's: 1 s) for the start
before it answers 202; a DELETE in that time cancels the start, and the POST's handler let the cancelled start's
CancelledError through: a 500 (seen in the soak).  This module's hub waits 30 s there instead: the same race, with
room to perform it every time.
"""

from __future__ import annotations

import threading

import pytest

from tests.support.http import wait_until
from tests.support.hub import hub_with_mock_slurm

LONGER_FIRST_SECOND = 'c.JupyterHub.tornado_settings.update({"slow_spawn_timeout": 30})\n'


@pytest.fixture(scope="module")
def a_hub_that_waits_for_starts(tmp_path_factory):
    with hub_with_mock_slurm(tmp_path_factory.mktemp("hub"), after=LONGER_FIRST_SECOND) as hub_and_slurm:
        yield hub_and_slurm


@pytest.mark.parametrize("server", ["", "named"])
def test_a_start_stopped_while_its_post_waits_is_answered_with_words(a_hub_that_waits_for_starts, server):
    hub, mock = a_hub_that_waits_for_starts
    path = f"/users/alice/servers/{server}" if server else "/users/alice/server"
    answers: dict = {}
    posting = threading.Thread(target=lambda: answers.update(post=hub.api("POST", path, {"gpus": 1, "hours": 1})))
    posting.start()
    job_id = wait_until(
        lambda: next((i for i, j in mock.jobs().items() if j["state"] == "PENDING"), None), what="the job submitted"
    )
    # the hub has its id: the stop cancels it (one stopped while its sbatch runs is the reconciler's)
    submitted = f"Session job {job_id} submitted for alice{':' + server if server else ''}\n"
    wait_until(lambda: submitted in hub.log.read_text(), what="sbatch answered")
    assert "post" not in answers  # the POST still waits for the start
    assert hub.api("DELETE", path)[0] in (202, 204)
    posting.join(60)

    status, message = answers["post"]
    assert status == 409, (status, message)
    assert message["message"] == (
        f"{'Session ' + repr(server) if server else 'Your unnamed session'} was stopped while it started (a stop "
        "request came before the start was answered); what it had started is being stopped. Start it again when "
        "you want it."
    )
    wait_until(lambda: mock.jobs()[job_id]["state"] == "CANCELLED", what="the job cancelled")
    wait_until(lambda: not hub.api("GET", "/users/alice")[1]["servers"], what="no session left")

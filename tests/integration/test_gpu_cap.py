"""sessions.max_gpus_per_user counts runs and sweeps beside sessions, on the real dev cluster (its limit: 4).

As a user would pass it: bob holds 2 GPUs in a session, then asks for a 3-GPU run, and for a sweep of 1 GPU
per run, 3 at once.  Before the fix both were submitted (the cap counted sessions only) and bob held or queued
5 GPUs; now both are refused with what counts and nothing reaches Slurm.  A sweep that fits (2 at once) is
accepted, and then a 1-GPU session is refused naming it.
"""

from __future__ import annotations

import pytest

from tests.integration.test_limits_race import gpus_held
from tests.support.jobs import JobsClient

MAX_GPUS = 4  # deploy/portal.dev.yaml: sessions.max_gpus_per_user
CAP_WORDS = f"sessions.max_gpus_per_user is {MAX_GPUS} here"


@pytest.fixture(scope="module")
def bob() -> JobsClient:
    return JobsClient.for_user("bob")


def sweep_of(at_once: int) -> dict:
    grid = {"seed": {"values": [0, 1, 2]}}
    return {"path": "cap/slow.ipynb", "partition": "sxm2", "gpus": 1, "hours": 0.5,
            "sweep": {"grid": grid, "at_once": at_once}}  # fmt: skip


def test_runs_and_sweeps_count_against_the_gpu_cap_beside_sessions(bob, cluster):
    bob.put_notebook("cap/slow.ipynb", ["import time\ntime.sleep(300)"], "seed = 0\n")
    # a session of that name a test before stopped is let go once Slurm's listing shows its job gone (409 till then)
    start = lambda: cluster.request("POST", "/hub/api/users/bob/servers/cap", {"gpus": 2, "hours": 1})  # noqa: E731
    status, body = cluster.wait(lambda: (answer := start())[0] != 409 and answer, 60, "bob's start of 'cap' taken")
    assert status in (201, 202), (status, body)
    session_job = cluster.wait(lambda: next(iter(gpus_held("bob")), None), 30, "bob's session job in Slurm")
    assert gpus_held("bob") == {session_job: 2}

    status, answer = bob.request("POST", "runs", {"path": "cap/slow.ipynb", "partition": "sxm2", "gpus": 3})
    assert status == 400, (status, answer)
    assert answer["message"].startswith("You hold 2 GPUs in 1 session (session 'cap': 2), and " + CAP_WORDS), answer
    assert "This run asks for 3, so it may ask for at most 2." in answer["message"], answer

    status, answer = bob.request("POST", "runs", sweep_of(at_once=3))
    assert status == 400, (status, answer)
    assert CAP_WORDS in answer["message"], answer
    assert "This sweep asks for 3 (1 GPU × 3 runs at once), so it may ask for at most 2." in answer["message"]
    assert gpus_held("bob") == {session_job: 2}  # nothing submitted

    sweep = bob.submit(sweep_of(at_once=2))["job_id"]  # 2 + 1 × 2 = 4: fits
    cluster.wait(lambda: any(j.startswith(f"{sweep}_") for j in gpus_held("bob")), 30, "bob's sweep in Slurm")
    status, body = cluster.request("POST", "/hub/api/users/bob/servers/more", {"gpus": 1, "hours": 1})
    assert status == 400, (status, body)
    assert body["message"].startswith(
        f"You hold 4 GPUs in 1 session and 1 sweep (session 'cap': 2, sweep {sweep}: 2), and {CAP_WORDS}"
    ), body
    assert "more" not in cluster.named_sessions("bob")

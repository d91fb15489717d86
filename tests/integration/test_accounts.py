"""Slurm accounts on the real dev cluster (slurmdbd's associations, enforced by slurmctld).

Every demo user is in the account `vision` (their default); alice also in `nlp`
(deploy/dev/associations.py).  The hub reads each user's accounts from one shared
pair of sacctmgr calls; a session that names one is charged to it.
"""

from __future__ import annotations

import re

import pytest

from tests.support.cluster import Cluster

pytestmark = pytest.mark.slurm  # run again on Slurm 24.11 (deploy/devcluster test, phase 3)

NOT_PHYSICS = 'account: you are not in the Slurm account "physics"; yours are vision, nlp (vision is your default).'


def token_of(cluster: Cluster, user: str) -> Cluster:
    cluster.ensure_user(user)
    status, token = cluster.request("POST", f"/hub/api/users/{user}/tokens", {"note": "accounts", "expires_in": 600})
    assert status == 201, token
    return Cluster(token["token"])


def test_a_user_in_two_projects_charges_the_one_she_chooses(cluster):
    status, alices = token_of(cluster, "alice").request("GET", "/hub/api/dsportal/accounts")
    assert status == 200 and (alices["accounts"], alices["default"]) == (["vision", "nlp"], "vision"), alices
    status, bobs = token_of(cluster, "bob").request("GET", "/hub/api/dsportal/accounts")
    assert status == 200 and (bobs["accounts"], bobs["default"]) == (["vision"], "vision"), bobs
    assert NOT_PHYSICS in cluster.refused_start("alice", {"gpus": 1, "hours": 1, "account": "physics"})
    assert 'account: you are not in the Slurm account "nlp"; yours are vision (vision is your default).' in (
        cluster.refused_start("bob", {"gpus": 0, "hours": 1, "account": "nlp"})
    )
    assert not cluster.jobs("alice") and not cluster.jobs("bob")  # nothing was submitted

    try:
        for options, account in (({"account": "nlp"}, "nlp"), ({}, "vision")):
            assert cluster.start("alice", {"gpus": 1, "hours": 1, **options}) in (201, 202)
            cluster.wait_ready("alice")
            job = cluster.job_of("alice")
            assert re.search(rf"\bAccount={account}\b", cluster.scontrol(job)), cluster.scontrol(job)
            cluster.stop("alice")
    finally:
        cluster.stop("alice")


def test_a_session_above_its_accounts_per_job_limit_fails_at_once_with_words(cluster):
    """nlp allows 2 GPUs per job: Slurm queues a 4-GPU job of it for AssocMaxGRESPerJob, which waiting never clears.
    The start fails with Slurm's reason in words (it waited for start_timeout, 15 min), and the job is cancelled."""
    cluster.ensure_user("alice")
    try:
        words = cluster.refused_start("alice", {"gpus": 4, "hours": 1, "account": "nlp"})  # 400, or its progress
        assert "it asks for more than one job may have under its Slurm account or QOS (AssocMaxGRESPerJob)" in words
        cluster.wait(lambda: not cluster.jobs("alice"), 60, "alice's job cancelled")
    finally:
        cluster.stop("alice")


def test_a_qos_is_chosen_among_those_offered_and_allowed_and_holds_its_wall_time(cluster):
    """The dev config offers the QOS short (MaxWall 1 h) and long (12 h); bob's association allows short only."""
    status, bobs = token_of(cluster, "bob").request("GET", "/hub/api/dsportal/accounts")
    assert status == 200
    assert bobs["qos"] == [
        {"name": "short", "label": "Short", "max_hours": 1.0, "accounts": ["vision"]},
        {"name": "long", "label": "Long", "max_hours": 12.0, "accounts": []},
    ]
    refusals = {
        ("bob", "long", 2): "qos: the account vision does not allow the QOS long; choose short, or none.",
        ("alice", "short", 2): "qos: short runs sessions of at most 1 h; ask for 1 h or less, or choose another QOS.",
        ("alice", "high", 1): 'qos: "high" is not offered here; choose one of short (Short), long (Long), or none',
    }
    for (user, qos, hours), words in refusals.items():
        assert words in cluster.refused_start(user, {"gpus": 0, "hours": hours, "qos": qos})
    assert not cluster.jobs("alice") and not cluster.jobs("bob")  # nothing was submitted
    try:
        assert cluster.start("alice", {"gpus": 0, "hours": 1, "qos": "short"}) in (201, 202)
        cluster.wait_ready("alice")
        assert re.search(r"\bQOS=short\b", cluster.scontrol(cluster.job_of("alice")))
    finally:
        cluster.stop("alice")


def test_an_allocation_used_up_is_refused_in_words_and_the_form_reads_what_is_left(cluster):
    """carol's second project, spent, has a GPU allocation of 0 (GrpTRESMins=gres/gpu=0); alice's nlp has 1,000
    GPU-hours.  The hub reads them with one shared sshare."""
    status, alices = token_of(cluster, "alice").request("GET", "/hub/api/dsportal/accounts")
    assert status == 200
    nlp = alices["allocations"]["nlp"]
    assert nlp["gpu_hours"] == 1000.0 and 0 <= nlp["gpu_hours_left"] <= 1000.0, nlp
    assert 0 <= nlp["fairshare"] <= 1, nlp
    assert alices["allocations"]["vision"]["gpu_hours"] is None  # no GPU allocation: no limit
    cluster.ensure_user("carol")
    words = cluster.refused_start("carol", {"gpus": 1, "hours": 1, "account": "spent"})
    assert (
        "account: the GPU allocation of the Slurm account spent is used up; charge vision instead, or ask for 0 GPUs."
    ) in words
    assert not cluster.jobs("carol")  # nothing was submitted
    try:  # without GPUs the project charges no GPU-minutes: the session runs
        assert cluster.start("carol", {"gpus": 0, "hours": 1, "account": "spent"}) in (201, 202)
        cluster.wait_ready("carol")
        assert re.search(r"\bAccount=spent\b", cluster.scontrol(cluster.job_of("carol")))
    finally:
        cluster.stop("carol")

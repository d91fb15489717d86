"""Shares of a GPU on the real dev cluster: node002's four A100, each cut in four shards (Slurm's gres/shard,
deploy/dev/slurmconf.py), offered as "a quarter of a GPU" and more (deploy/portal.dev.yaml's slurm.shards)."""

from __future__ import annotations

import re

import pytest

from tests.support.cluster import Cluster


def sxm2(user: Cluster) -> dict:
    return user.partition("sxm2")


@pytest.mark.slurm
def test_two_sessions_on_shares_of_one_node_and_what_is_refused_before_sbatch(cluster):
    as_alice = cluster.as_user("alice", "shares")
    free = cluster.wait(lambda: sxm2(as_alice).get("shards_total") and sxm2(as_alice), 30, "sxm2's shares")
    assert (free["shards_total"], free["shard_label"]) == (16, "A100 80 GB"), free
    assert "shares of a GPU free" in free["summary"]
    assert set(free["starts_now_shards"]) == {"1", "2", "3"}

    # what Slurm could not give, or the portal does not offer, is refused in words and nothing is submitted
    for options, words in (
        (
            {"gpus": 0, "shards": 1, "partition": "cpu"},
            "shards: partition cpu has no GPUs shared in 1 shard(s) or more; choose partition debug or sxm2",
        ),
        ({"gpus": 1, "shards": 1}, "asked together with 1 whole GPU(s); ask for one or the other"),
        ({"gpus": 0, "shards": 4}, "shards: 4 is out of range; choose a whole number from 1 to 3"),
        ({"gpus": 0, "shards": 1, "gpu_type": "a100"}, "gpu_type: a share comes from partition sxm2's shared GPUs"),
    ):
        assert words in cluster.refused_start("alice", {"hours": 1, **options}), options
    assert not cluster.jobs("alice")

    # a quarter of a GPU for alice, half of one for bob: both on node002, each with its share's cores and memory
    for name, shards, words, cores, memory in (
        ("alice", 1, "a quarter of a GPU", 2, "12G"),
        ("bob", 2, "half a GPU", 4, "24G"),
    ):
        assert cluster.start(name, {"gpus": 0, "shards": shards, "hours": 1}) in (201, 202)
        cluster.wait_ready(name)
        job = cluster.job_of(name)
        assert cluster.jobs(name)[job]["node"] == "node002"
        shown = cluster.scontrol(job)
        assert re.search(rf"TresPerNode=gres[:/]shard:{shards}\b", shown), shown
        assert f"NumCPUs={cores} " in shown and f"mem={memory}" in shown, shown
        status, made = cluster.request("POST", f"/hub/api/users/{name}/tokens", {"note": "card", "expires_in": 600})
        status, home = Cluster(made["token"]).request("GET", "/hub/api/dsportal/session")
        assert status == 200 and home["session"]["share"] == words, home
    status, home = as_alice.request("GET", "/hub/api/dsportal/session")
    assert status == 200, home
    card = home["session"]
    assert (card["share"], card["gpus"], card["gpu_share"]) == ("a quarter of a GPU", 0, 0.25), card
    assert card["summary"].startswith("a quarter of a GPU · 2 cores · 12 GB RAM"), card
    # the session sees one GPU, numbered 0 as CUDA numbers a job's own: the one its shards are of
    status, gpus = cluster.request("GET", "/user/alice/dsportal/session/gpus")
    assert status == 200 and [g["index"] for g in gpus["gpus"]] == [0], gpus
    # the shares they hold are no longer free (Slurm 22.05's sinfo counts the shards held on one GPU short: 3 on
    # GPU 0 print as 1, so the count is read as "some", and Slurm's own estimate decides whether a share starts)
    cluster.wait(lambda: sxm2(as_alice)["shards_free"] < 16, 45, "shards taken")
    cluster.stop("alice")
    cluster.stop("bob")

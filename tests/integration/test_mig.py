"""MIG instances on the real dev cluster: node004's GPUs are typed GRES named as MIG profiles (two a100_3g.40gb,
two a100_1g.10gb: deploy/dev/slurmconf.py), in a partition of their own (`mig`).

The hub offers them as it offers any GPU type: read from Slurm (sinfo), labelled and sized from the admin config
(slurm.gpu_types, slurm.gpu_memory), submitted with --gres=gpu:TYPE:N; asking more of a profile than a node has is
refused in words before sbatch.
"""

from __future__ import annotations

import re

import pytest

from tests.support.cluster import job_gpus


@pytest.mark.slurm
def test_a_session_on_a_mig_slice_and_more_slices_of_a_profile_than_a_node_has_refused_in_words(cluster):
    as_alice = cluster.as_user("alice", "mig")
    types = cluster.wait(lambda: as_alice.partition("mig")["types"], 30, "mig's GPU types in the hub's answer")
    assert [(t["gpu_type"], t["label"], t["gpus_total"], t["memory_gb"]) for t in types] == [
        ("a100_1g.10gb", "A100 MIG 1g (1 of 7 compute slices)", 2, 10),
        ("a100_3g.40gb", "A100 MIG 3g (3 of 7 compute slices)", 2, 40),
    ]

    # more slices of one profile than node004 has: words before sbatch, nothing submitted
    words = cluster.refused_start("alice", {"partition": "mig", "gpus": 3, "gpu_type": "a100_3g.40gb", "hours": 1})
    assert (
        "gpus: the nodes of partition mig have at most 2 GPU(s) of type A100 MIG 3g (3 of 7 compute slices); "
        "ask for 2 or fewer, or for another type."
    ) in words
    assert not cluster.jobs("alice")

    assert cluster.start("alice", {"partition": "mig", "gpus": 1, "gpu_type": "a100_1g.10gb", "hours": 1}) in (
        201,
        202,
    )
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    # Slurm's own word: one 1g.10gb slice
    assert re.search(r"TresPerNode=gres[:/]gpu:a100_1g\.10gb:1\b", cluster.scontrol(job)), cluster.scontrol(job)
    assert job_gpus(job) in (("node004", ["2"]), ("node004", ["3"]))  # node004's 1g.10gb devices
    free = cluster.wait(
        lambda: (
            {t["gpu_type"]: t["gpus_free"] for t in as_alice.partition("mig")["types"]}
            == {"a100_1g.10gb": 1, "a100_3g.40gb": 2}
        ),
        30,
        "one 1g.10gb slice held, the rest free",
    )
    assert free
    status, session = as_alice.request("GET", "/hub/api/dsportal/session")
    assert status == 200
    # the card names what the session holds
    assert session["session"]["gpu_type"] == "A100 MIG 1g (1 of 7 compute slices)", session["session"]
    cluster.stop("alice")

"""A user racing starts on the real dev cluster cannot pass the admin's limits (sessions.max_gpus_per_user: 4).

The attack: alice sends five starts of 4-GPU named sessions at the same moment.  Before the fix each start's
check counted only sessions whose sbatch had answered, so all five passed it: alice held all 8 GPUs of the dev
cluster (and three more jobs waited for theirs).
"""

from __future__ import annotations

import re
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

from tests.support.cluster import url_for
from tests.support.http import json_request

MAX_GPUS = 4  # deploy/portal.dev.yaml: sessions.max_gpus_per_user


def gpus_held(user: str) -> dict[str, int]:
    """Slurm's own view: the user's pending and running jobs -> the GPUs each asked for."""
    out = subprocess.run(
        ["squeue", "-h", "-u", user, "-t", "PD,R,CG", "-o", "%i|%b"], capture_output=True, text=True, timeout=30
    ).stdout
    held = {}
    for line in out.splitlines():
        job_id, _, tres = line.partition("|")
        found = re.search(r"gpu(?::[^:,]+)?:([0-9]+)", tres)
        held[job_id] = int(found.group(1)) if found else 0
    return held


def test_five_simultaneous_4_gpu_starts_give_alice_no_more_than_4_gpus(cluster):
    alice = cluster.user_token("alice")
    names = [f"race-{i}" for i in range(5)]
    gate = threading.Barrier(len(names))

    def start(name: str):
        gate.wait()
        url = url_for(f"/hub/api/users/alice/servers/{name}")
        return name, json_request("POST", url, {"gpus": 4, "hours": 1}, token=alice, timeout=60)

    with ThreadPoolExecutor(len(names)) as pool:
        answers = dict(pool.map(start, names))
    accepted = {n for n, (status, _) in answers.items() if status in (201, 202)}
    refused = {n: body for n, (status, body) in answers.items() if n not in accepted}
    assert len(accepted) == 1, answers
    for name, body in refused.items():
        assert answers[name][0] == 400, answers
        assert f"sessions.max_gpus_per_user is {MAX_GPUS} here" in body["message"], body
    held = cluster.wait(lambda: gpus_held("alice"), 30, "alice's accepted job in Slurm")
    assert sum(held.values()) <= MAX_GPUS and len(held) == 1, held
    # the refused names leave no stopped session behind
    cluster.wait(lambda: cluster.named_sessions("alice") == sorted(accepted), 30, f"only {accepted} kept")
    (name,) = accepted
    cluster.stop_named("alice", name)
    cluster.wait(lambda: not gpus_held("alice"), 60, "alice's job gone")

"""Sessions on the real dev cluster: real Slurm, the real hub and proxy on port 8000."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.cluster import HUB, Cluster, url_for
from tests.support.demo import password_of
from tests.support.http import json_request
from tests.support.hub import FormBrowser


def field(text: str, name: str) -> str:
    match = re.search(rf"\b{name}=(\S+)", text)
    return match.group(1) if match else ""


@pytest.mark.slurm
def test_two_gpu_session_starts_answers_and_stops(cluster):
    assert cluster.start("alice", {"partition": "sxm2", "gpus": 2, "hours": 8}) in (201, 202)
    job_id = cluster.job_of("alice")
    job = cluster.scontrol(job_id)
    assert "gres/gpu=2" in job or "gpu:2" in job, job
    assert (field(job, "NumCPUs"), field(job, "TimeLimit"), field(job, "Partition")) == ("16", "08:00:00", "sxm2")
    assert field(job, "NumNodes") in ("1", "1-1")  # pending jobs show min-max
    assert field(job, "MinMemoryNode") == "96G" or "mem=96G" in job
    assert field(job, "UserId").startswith("alice(")
    assert field(job, "JobName") == "dsportal"

    server = cluster.wait_ready("alice")
    assert server["url"] == url_for("/user/alice/")  # its own origin
    status, body = cluster.request("GET", "/user/alice/api/status")
    assert status == 200 and "started" in body, body
    assert cluster.jobs("alice")[job_id]["state"] == "RUNNING"

    cluster.stop("alice")
    assert job_id not in cluster.jobs()


def test_cpu_only_session_has_no_gpus(cluster):
    assert cluster.start("bob", {"gpus": 0, "hours": 1}) in (201, 202)
    job = cluster.scontrol(cluster.job_of("bob"))
    assert "gpu" not in job.lower().replace("gpu-", ""), job
    assert (field(job, "NumCPUs"), field(job, "TimeLimit")) == ("4", "01:00:00")
    assert field(job, "MinMemoryNode") == "16G"
    cluster.wait_ready("bob")


@pytest.mark.slurm
def test_a_session_on_the_cpu_only_partition(cluster):
    # node003 has no GPU; its partition is CPU-only in the config (max_gpus: 0)
    status, answer = cluster.request("GET", "/hub/api/dsportal/partitions")
    assert status == 200, answer
    cpu = next(p for p in answer["partitions"] if p["partition"] == "cpu")
    assert re.fullmatch(r"cpu: CPU only, \d+ of 40 cores free", cpu["summary"]), cpu
    assert (cpu["max_gpus"], cpu["types"]) == (0, [])
    refused = cluster.refused_start("bob", {"partition": "cpu", "gpus": 1, "hours": 1})
    assert "partition cpu has no GPUs (CPU only): choose 0 GPUs, or a partition with GPUs" in refused
    assert not cluster.jobs("bob")  # nothing was submitted
    assert cluster.start("bob", {"partition": "cpu", "gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("bob")
    job = cluster.job_of("bob")
    assert cluster.jobs("bob")[job]["node"] == "node003"
    assert (field(cluster.scontrol(job), "NumCPUs"), field(cluster.scontrol(job), "Partition")) == ("4", "cpu")
    # the dev config's apps.by_partition: no VS Code on the CPU node; asked for anyway, it is refused in words
    status, kinds = cluster.request("GET", "/user/bob/dsportal/apps/api/kinds")
    assert [k["name"] for k in kinds] == ["mlflow", "streamlit", "dash"], kinds
    status, answer = cluster.request("POST", "/user/bob/dsportal/apps/api/instances", {"kind": "vscode", "target": "."})
    assert status == 400 and "'vscode' is not an app this session offers (offered: MLflow" in answer["message"]
    cluster.stop("bob")


@pytest.mark.slurm
@pytest.mark.alone  # needs all 8 GPUs: a third waits for Resources
def test_two_users_share_the_cluster_and_a_third_waits_in_the_queue(cluster):
    cluster.start("alice", {"gpus": 4})
    cluster.start("bob", {"gpus": 4})
    cluster.wait_ready("alice")
    cluster.wait_ready("bob")
    nodes = {cluster.jobs("alice")[cluster.job_of("alice")]["node"], cluster.jobs("bob")[cluster.job_of("bob")]["node"]}
    assert nodes == {"node001", "node002"}

    cluster.start("carol", {"gpus": 4})
    carol_job = cluster.job_of("carol")
    messages = cluster.progress("carol", until="Slurm expects it to start at", timeout=120)  # backfill: every 30 s
    # why, where in the queue, and until when (the dev cluster's backfill scheduler gives an estimate)
    assert re.fullmatch(
        f"Job {carol_job} is queued on sxm2: waiting for GPUs to become free \\(Resources\\)\\. "
        "It is 1st in line there\\. Slurm expects it to start at [0-9-]{10} [0-9:]{5}\\.",
        messages[-1],
    ), messages
    assert cluster.jobs("carol")[carol_job]["state"] == "PENDING"
    assert not cluster.server("carol")["ready"]
    # carol leaves the page and comes back: the home page's card says the same, with a cancel button
    status, token = cluster.request("POST", "/hub/api/users/carol/tokens", {"note": "home page"})
    status, page = json_request("GET", url_for("/hub/api/dsportal/session"), token=token["token"], timeout=30)
    assert (status, page["session"]["state"]) == (200, "queued"), page
    assert page["session"]["message"].startswith(messages[-1].split(" Slurm expects")[0]), (page, messages)
    cluster.stop("carol")  # what the card's Cancel does: DELETE .../server while the start waits
    cluster.wait(lambda: carol_job not in cluster.jobs("carol"), 30, "carol's queued job cancelled")
    status, page = json_request("GET", url_for("/hub/api/dsportal/session"), token=token["token"], timeout=30)
    assert page["session"] == {"state": "none"} and page["history"][0]["job_id"] == carol_job, page
    cluster.start("carol", {"gpus": 4})
    carol_job = cluster.job_of("carol")

    cluster.stop("alice")
    cluster.wait_ready("carol")
    assert cluster.jobs("carol")[carol_job]["state"] == "RUNNING"


@pytest.mark.slurm
def test_refused_options_submit_nothing(cluster):
    cluster.ensure_user("alice")
    for options, message in (
        ({"gpus": 5}, "gpus: 5 is out of range"),
        ({"partition": "nope"}, 'partition: "nope" is not offered here'),
    ):
        status, body = cluster.request("POST", "/hub/api/users/alice/server", options)
        assert status == 400 and body["message"].startswith(message), body
    # each 400 is the hub's answer to the spawn request itself: nothing can be submitted after it
    assert cluster.jobs("alice") == {}
    assert cluster.server("alice") is None


@pytest.mark.slurm
def test_a_job_cancelled_outside_the_portal_is_noticed(cluster):
    cluster.start("alice", {"gpus": 1})
    cluster.wait_ready("alice")
    job_id = cluster.job_of("alice")
    subprocess.run(["scancel", job_id], check=True, timeout=30)
    cluster.wait(lambda: cluster.server("alice") is None, 60, "the hub noticing the cancelled job")
    assert "Your session was cancelled outside the portal at " in home_page("alice")
    # the user can start a new session
    cluster.start("alice", {"gpus": 1})
    cluster.wait_ready("alice")
    assert cluster.job_of("alice") != job_id


@pytest.mark.alone  # restarts the hub
def test_hub_restart_keeps_a_running_session(cluster):
    cluster.start("alice", {"gpus": 1})
    cluster.wait_ready("alice")
    job_id = cluster.job_of("alice")
    cluster.restart_hub()
    server = cluster.wait_ready("alice", timeout=30)
    assert server["url"] == url_for("/user/alice/")  # its own origin
    status, body = cluster.request("GET", "/user/alice/api/status")
    assert status == 200, body
    assert cluster.jobs("alice")[job_id]["state"] == "RUNNING"


def test_the_portal_answers_on_port_8000(cluster):
    import urllib.request

    page = urllib.request.urlopen(f"{HUB}/hub/login", timeout=30).read().decode()
    assert "Log in with your cluster username and password." in page


def sxm2_once_free(user: Cluster, gpus: int) -> dict:
    """sxm2's entry in what is free, once the hub's shared answer (renewed every few seconds) has `gpus` free."""

    def entry() -> dict | None:
        found = user.request("GET", "/hub/api/dsportal/partitions")[1]["partitions"][0]
        return found if found["gpus_free"] == gpus else None

    return user.wait(entry, 30, f"{gpus} GPUs free on sxm2 in the hub's answer")


@pytest.mark.alone  # counts the cluster's free GPUs
def test_what_is_free_and_when_a_session_would_start(cluster):
    status, token = cluster.request("POST", "/hub/api/users/alice/tokens", {"note": "estimate", "expires_in": 600})
    assert status == 201, token
    as_alice = Cluster(token["token"])
    # the hub's shared answer is renewed every few seconds: the previous test's session may still be in it
    free = sxm2_once_free(as_alice, 8)
    assert free["summary"] == (
        "sxm2: 8 of 8 GPUs free, largest free block 4 on one node, 16 of 16 shares of a GPU free"
    )
    # bob's blocker jobs take every GPU for 10 minutes
    for _ in range(2):
        subprocess.run(
            [
                "sudo",
                "-u",
                "bob",
                "sbatch",
                "--job-name=blocker",
                "--partition=sxm2",
                "--gres=gpu:4",
                "--time=10",
                "--chdir=/home/bob",
                "--output=/dev/null",
                "--wrap",
                "sleep 600",
            ],
            check=True,
            timeout=30,
            capture_output=True,
        )
    try:
        cluster.wait(
            lambda: len([j for j in cluster.jobs("bob").values() if j["state"] == "RUNNING"]) == 2,
            60,
            "the blockers running",
        )
        busy = sxm2_once_free(as_alice, 0)
        # a GPU held whole has no shard to give (Slurm keeps a GPU whole or in shards): none of node002's is free
        assert busy["summary"] == (
            "sxm2: 0 of 8 GPUs free, largest free block 0 on one node, 0 of 16 shares of a GPU free"
        )
        status, share = as_alice.request("GET", "/hub/api/dsportal/estimate?partition=sxm2&gpus=0&shards=1&hours=1")
        assert status == 200 and share["starts_now"] is False, share
        status, when = as_alice.request("GET", "/hub/api/dsportal/estimate?partition=sxm2&gpus=2&hours=1")
        assert status == 200 and when["starts_now"] is False, when
        assert re.fullmatch(r"[0-9-]{10}T[0-9:]{8}", when["start"]), when  # Slurm's own estimate (sbatch --test-only)
        assert when["message"].startswith("2 GPUs · 16 cores · 96 GB RAM · 1 h on sxm2: not free now; Slurm expects")
        assert not [j for j in cluster.jobs("alice")]  # nothing was queued for alice
    finally:
        subprocess.run(["scancel", "--name=blocker"], timeout=30)


def home_page(user: str) -> str:
    browser = FormBrowser(HUB)
    assert browser.login(user, password_of(user))[0] == 302
    status, page, _ = browser.get("/hub/home")
    assert status == 200
    return page

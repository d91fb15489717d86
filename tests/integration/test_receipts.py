"""Receipts on the real dev cluster: a session's and a run's, with what their jobs ran with on the nodes.

alice's session runs on a GPU node and ends; its receipt holds what she asked for, the node, the packages of her
kernel's Python (the portal's under her own layer), the kernels offered and the portal's version, and nothing is
gone.  Her script run's receipt holds the folder's git commit.  bob cannot read hers."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.cluster import url_for
from tests.support.http import json_request
from tests.support.jobs import JobsClient


@pytest.fixture(scope="module")
def alice() -> JobsClient:
    return JobsClient.for_user("alice")


def receipt_of(client: JobsClient, job_id: str) -> tuple[int, dict]:
    return json_request("GET", url_for(f"/hub/api/dsportal/receipts/{job_id}"), token=client.token)


@pytest.mark.slurm
def test_a_sessions_receipt_holds_its_request_node_and_environment(alice, cluster):
    options = {"partition": "sxm2", "gpus": 1, "hours": 1}
    assert cluster.start("alice", options) in (201, 202)
    job_id = cluster.job_of("alice")
    cluster.wait_ready("alice")
    written = alice.home / ".dsportal" / "receipts" / f"{job_id}.environment.json"
    cluster.wait(written.exists, 90, "the session's environment written on its node")
    node = cluster.jobs("alice")[job_id]["node"]
    cluster.stop("alice")

    status, receipt = receipt_of(alice, job_id)
    assert status == 200, receipt
    assert (receipt["kind"], receipt["user"], receipt["job_id"]) == ("session", "alice", job_id)
    assert {k: receipt["request"][k] for k in options} == options
    environment = receipt["environment"]
    assert environment["nodes"] == node
    assert environment["portal"] == receipt["portal_now"]
    names = {p.split("==")[0].lower() for p in environment["packages"]}
    assert {"dsportal", "jupyterlab", "ipykernel", "numpy"} <= names
    assert "python3" in [k["name"] for k in environment["kernels"]]
    assert receipt["again"] == {"gone": []}

    bob = JobsClient.for_user("bob")
    status, refused = receipt_of(bob, job_id)
    assert status == 404 and refused["message"].startswith(f"No session or run of yours with job {job_id}")


def test_a_runs_receipt_names_its_folders_commit(alice, cluster):
    alice.write("receipts/hello.py", "print('hello from a receipt')\n")
    git = ["runuser", "-u", "alice", "--", "git", "-C", str(alice.home / "receipts")]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    subprocess.run([*git, "add", "hello.py"], check=True, timeout=30)
    subprocess.run(
        [
            *git,
            "-c",
            "user.name=alice",
            "-c",
            "user.email=alice@dsportal.test",
            "commit",
            "--allow-empty",
            "-qm",
            "hello",
        ],
        check=True,
        timeout=30,
    )
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30).stdout.strip()
    run = alice.submit({"path": "receipts/hello.py", "partition": "cpu", "hours": 0.1})
    alice.wait_ended(run["job_id"])
    status, receipt = receipt_of(alice, run["job_id"])
    assert status == 200, receipt
    assert (receipt["kind"], receipt["path"]) == ("run", "receipts/hello.py")
    assert receipt["environment"]["git"] == {"folder": str(alice.home / "receipts"), "commit": commit, "changed": False}

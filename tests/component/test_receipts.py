"""A run's receipt through the hub's API (real hub, mock Slurm, the job's environment file as the job writes it).

What the hub knows (the request, the job) is there at once; what the job ran with once the job wrote it; what
of it cannot be had again is said; another user's job is no receipt of bob's."""

from __future__ import annotations

import json
import time
import urllib.request

from spawner.job.receipts import environment
from tests.support.http import wait_until
from tests.support.hub import ADMIN_TOKEN


def token_of(hub, user: str) -> str:
    hub.api("POST", f"/users/{user}")
    status, made = hub.api("POST", f"/users/{user}/tokens", {"note": "receipts"})
    assert status == 201, made
    return made["token"]


def test_a_runs_receipt_holds_its_request_then_its_environment_and_says_what_is_gone(a_hub_and_its_slurm):
    hub, mock = a_hub_and_its_slurm
    alice, bob = token_of(hub, "alice"), token_of(hub, "bob")
    (hub.root / "homes" / "alice" / "hello.py").write_text("print('hello')\n")
    status, body = hub.api("POST", "/dsportal/runs", {"path": "hello.py", "hours": 0.1}, token=alice)
    assert status == 201, body
    job_id = body["job"]["job_id"]

    status, receipt = hub.api("GET", f"/dsportal/receipts/{job_id}", token=alice)
    assert status == 200, receipt
    assert (receipt["receipt"], receipt["kind"], receipt["user"], receipt["job_id"], receipt["path"]) == (
        1,
        "run",
        "alice",
        job_id,
        "hello.py",
    )
    assert receipt["request"]["hours"] == 0.1 and receipt["request"]["partition"] == "sxm2"
    assert receipt["environment"] is None and "recorded no environment" in receipt["environment_missing"]
    assert receipt["again"] == {"gone": []} and receipt["portal_now"]

    # the job starts and records what it runs with, in alice's home (spawner/job/runs/runner.py)
    facts = environment.environment(
        job_id=job_id,
        kind="run",
        nodes="node001",
        python="/opt/dsportal/venv/bin/python",
        found=(["dsportal==0.2.0.dev0", "tornado==0.0.1"], ""),
        modules=["cuda/12.4"],
        kernels=[],
        git=None,
        written=time.time(),
    )
    environment.write(hub.root / "homes" / "alice", job_id, facts)
    status, receipt = hub.api("GET", f"/dsportal/receipts/{job_id}", token=alice)
    assert status == 200, receipt
    assert receipt["environment"]["nodes"] == "node001" and receipt["environment"]["modules"] == ["cuda/12.4"]
    assert receipt["environment"]["packages"] == ["dsportal==0.2.0.dev0", "tornado==0.0.1"]
    [gone] = receipt["again"]["gone"]  # the hub's environment.prefix (its own venv here) has another tornado
    assert gone.startswith("the portal's environment has other versions of tornado 0.0.1 (now ")
    assert [c["user"] for c in mock.calls("sudo") if "head" in c.get("argv", [])][-1:] == ["alice"]

    # a file to keep
    request = urllib.request.Request(
        f"{hub.url}/hub/api/dsportal/receipts/{job_id}", headers={"Authorization": f"token {alice}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers["Content-Disposition"] == f'attachment; filename="dsportal-receipt-{job_id}.json"'
        assert json.loads(answer.read())["job_id"] == job_id

    # bob: alice's job is none of his, in the words of a job he never had; an admin's token is no user's
    status, refused = hub.api("GET", f"/dsportal/receipts/{job_id}", token=bob)
    assert status == 404 and refused["message"].startswith(f"No session or run of yours with job {job_id}")
    assert hub.api("GET", "/dsportal/receipts/999999", token=bob)[1]["message"] == refused["message"].replace(
        job_id, "999999"
    )
    assert hub.api("GET", f"/dsportal/receipts/{job_id}", token=ADMIN_TOKEN)[0] == 403
    hub.api("POST", f"/dsportal/runs/{job_id}/cancel", token=alice)


def test_a_sessions_own_token_cannot_read_the_owners_receipts(a_hub_and_its_slurm):
    """A guest of a shared session can read the session's token (its environment): with it they would read every
    receipt of the owner's, their other sessions' accounts and packages.  The receipts refuse it, in words."""
    hub, mock = a_hub_and_its_slurm
    bob = token_of(hub, "bob")
    (hub.root / "homes" / "bob" / "hi.py").write_text("print('hi')\n")
    status, body = hub.api("POST", "/dsportal/runs", {"path": "hi.py", "hours": 0.1}, token=bob)
    assert status == 201, body
    run = body["job"]["job_id"]
    assert hub.api("POST", "/users/bob/server", {"gpus": 1, "hours": 1})[0] in (201, 202)
    session_token = wait_until(
        lambda: next(
            (c["env"]["JUPYTERHUB_API_TOKEN"] for c in mock.calls("sbatch") if c["env"].get("USER") == "bob" and
             "JUPYTERHUB_API_TOKEN" in c["env"]),
            None,
        ),
        what="bob's session submitted with its token",
    )  # fmt: skip
    status, refused = hub.api("GET", f"/dsportal/receipts/{run}", token=session_token)
    assert (status, refused["message"]) == (
        403,
        "A session's own token cannot read receipts (a guest of a shared session can read it); use the home page "
        "or an API token of yours from the Token page.",
    )
    assert hub.api("GET", f"/dsportal/receipts/{run}", token=bob)[0] == 200  # bob's own token reads it
    hub.api("DELETE", "/users/bob/server")
    hub.api("POST", f"/dsportal/runs/{run}/cancel", token=bob)

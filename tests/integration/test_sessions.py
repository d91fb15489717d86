"""Several sessions per user and shares, on the real dev cluster (real hub, Slurm, sessions).

alice runs her unnamed session and a named one at once through the REST API
(with a token of hers): each is its own Slurm job that runs code, extends and
stops alone; the admin's limits refuse a fourth session and a GPU too many
with words before anything is submitted.  A share with bob survives a hub
restart with both sessions; a share with a group lets its members in; a share
that expires, or a session that ends, lets no one in any more.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, url_for
from tests.support.http import json_request, wait_until
from tests.support.jupyter import run_code


def call(token: str, method: str, path: str, body=None):
    return json_request(method, url_for(path), body, token=token, timeout=60)


def ready(cluster: Cluster, user: str, server: str) -> dict:
    try:
        return cluster.wait(
            lambda: (cluster.server(user, server) or {}).get("ready") and cluster.server(user, server),
            120,
            f"{user}/{server} ready",
        )
    except AssertionError as e:  # what the session's jobs printed, for the one who reads the failure
        logs = sorted(Path(f"/home/{user}").glob(".dsportal-session-*.log"), key=lambda p: p.stat().st_mtime)
        tails = "\n".join(f"{p.name}:\n{p.read_text(errors='replace')[-3000:]}" for p in logs[-2:])
        raise AssertionError(f"{e}\n{tails}") from None


def time_limit(cluster: Cluster, job_id: str) -> str:
    return re.search(r"TimeLimit=(\S+)", cluster.scontrol(job_id)).group(1)


def test_two_sessions_of_one_user_each_behave_alone_within_the_admins_limits(cluster):
    alice = cluster.user_token("alice")
    assert call(alice, "POST", "/hub/api/users/alice/server", {"gpus": 0, "hours": 1})[0] in (201, 202)
    assert call(alice, "POST", "/hub/api/users/alice/servers/train", {"gpus": 1, "hours": 1})[0] in (201, 202)
    ready(cluster, "alice", "")
    ready(cluster, "alice", "train")
    page = call(alice, "GET", "/hub/api/dsportal/session")[1]
    cards = {s["name"]: s["session"] for s in page["sessions"]}
    assert cards[""]["state"] == cards["train"]["state"] == "running", cards
    assert cards[""]["job_id"] != cards["train"]["job_id"]
    assert (cards[""]["gpus"], cards["train"]["gpus"]) == (0, 1)
    assert set(cluster.jobs("alice")) == {cards[""]["job_id"], cards["train"]["job_id"]}

    # each runs code in its own job
    for path, job in (("alice", cards[""]["job_id"]), ("alice/train", cards["train"]["job_id"])):
        status, out = run_code(cluster, path, "python3", "import os; print(os.environ['SLURM_JOB_ID'])")
        assert (status, out.strip()) == ("ok", job)

    # the admin's limits, with words, before anything is submitted
    jobs_before = set(cluster.jobs("alice"))
    status, body = call(alice, "POST", "/hub/api/users/alice/servers/big", {"gpus": 4, "hours": 1})
    words = "You hold 1 GPU in 1 session (session 'train': 1), and sessions.max_gpus_per_user is 4 here"
    assert status == 400 and words in body["message"], body
    status, body = call(alice, "POST", "/hub/api/users/alice/servers/Big_One", {"gpus": 0, "hours": 1})
    assert status == 400 and "cannot be called 'Big_One'" in body["message"], body
    assert set(cluster.jobs("alice")) == jobs_before
    assert "big" not in cluster.named_sessions("alice")  # a refused start leaves no kept session behind
    assert call(alice, "POST", "/hub/api/users/alice/servers/third", {"gpus": 0, "hours": 1})[0] in (201, 202)
    ready(cluster, "alice", "third")
    status, body = call(alice, "POST", "/hub/api/users/alice/servers/fourth", {"gpus": 0, "hours": 1})
    assert status == 400 and "You already run 3 sessions" in body["message"], body
    cluster.stop_named("alice", "third")

    # extending one session leaves the other's time alone
    before = time_limit(cluster, cards[""]["job_id"])
    status, body = call(alice, "POST", "/hub/api/dsportal/session/extend?server=train")
    assert status == 200, body
    assert time_limit(cluster, cards["train"]["job_id"]) == "02:00:00"
    assert time_limit(cluster, cards[""]["job_id"]) == before == "01:00:00"

    # stopping the unnamed one leaves "train" running and reachable
    cluster.stop("alice")
    assert set(cluster.jobs("alice")) == {cards["train"]["job_id"]}
    assert call(alice, "GET", "/user/alice/train/api/status")[0] == 200
    history = call(alice, "GET", "/hub/api/dsportal/session")[1]["history"]
    assert history[0]["job_id"] == cards[""]["job_id"]


@pytest.mark.alone  # restarts the hub
def test_a_share_survives_a_hub_restart_and_ends_with_its_time_or_its_session(cluster):
    alice, bob, dave = (cluster.user_token(name) for name in ("alice", "bob", "dave"))
    assert call(alice, "POST", "/hub/api/users/alice/server", {"gpus": 0, "hours": 1})[0] in (201, 202)
    assert call(alice, "POST", "/hub/api/users/alice/servers/train", {"gpus": 0, "hours": 1})[0] in (201, 202)
    ready(cluster, "alice", "")
    ready(cluster, "alice", "train")
    jobs = set(cluster.jobs("alice"))
    assert len(jobs) == 2
    status_url = "/user/alice/train/api/status"
    assert call(bob, "GET", status_url)[0] == 403

    status, share = call(alice, "POST", "/hub/api/dsportal/shares", {"server": "train", "user": "bob", "hours": 2})
    assert status == 200 and share["name"] == "bob" and share["seconds_left"] > 7000, share
    assert call(bob, "GET", status_url)[0] == 200
    assert call(dave, "GET", status_url)[0] == 403
    mine = call(bob, "GET", "/hub/api/dsportal/shares")[1]["with_me"]
    assert [(s["owner"], s["server"], s["running"]) for s in mine] == [("alice", "train", True)]
    # bob cannot share onward, nor stop the session; a session's own token cannot share either
    assert call(bob, "POST", "/hub/api/dsportal/shares", {"server": "train", "user": "dave"})[0] == 404
    assert call(bob, "DELETE", "/hub/api/users/alice/servers/train")[0] in (403, 404)
    refused = [
        ({"server": "train", "user": "nobody"}, 400, "no portal user called 'nobody'"),
        ({"server": "train", "user": "alice"}, 400, "your own session"),
        ({"server": "train", "group": "hpcadmin"}, 400, "only with a group you are in"),
        ({"server": "train", "user": "bob", "hours": 100}, 400, "at most 12"),
        ({"server": "nosuch", "user": "bob"}, 404, "no session called 'nosuch'"),
    ]
    for body, code, words in refused:
        status, answer = call(alice, "POST", "/hub/api/dsportal/shares", body)
        assert status == code and words in answer["message"], (body, status, answer)

    Cluster.restart_hub()
    for server in ("", "train"):
        wait_until(lambda s=server: (cluster.server("alice", s) or {}).get("ready"), 60, f"{server!r} ready again")
    assert set(cluster.jobs("alice")) == jobs  # the reconciler cancelled nothing
    assert call(alice, "GET", "/user/alice/api/status")[0] == 200
    assert call(bob, "GET", status_url)[0] == 200  # the share, too, outlived the restart

    # a group share lets its members in; revoking it shuts them out
    status, share = call(alice, "POST", "/hub/api/dsportal/shares", {"server": "train", "group": "datasci", "hours": 1})
    assert status == 200 and share["kind"] == "group", share
    assert call(dave, "GET", status_url)[0] == 200
    assert call(alice, "DELETE", "/hub/api/dsportal/shares?server=train&group=datasci")[0] == 200
    assert call(dave, "GET", status_url)[0] == 403

    # a share ends at its time: 0.002 h is about 7 s
    call(alice, "DELETE", "/hub/api/dsportal/shares?server=train&user=bob")
    status, share = call(alice, "POST", "/hub/api/dsportal/shares", {"server": "train", "user": "bob", "hours": 0.002})
    assert status == 200 and share["seconds_left"] <= 8, share
    assert call(bob, "GET", status_url)[0] == 200
    wait_until(lambda: call(bob, "GET", status_url)[0] == 403, 20, "bob's share expired", every=0.5)

    # the end of the session ends its shares
    call(alice, "POST", "/hub/api/dsportal/shares", {"server": "train", "user": "bob", "hours": 1})
    assert call(bob, "GET", status_url)[0] == 200
    cluster.stop_named("alice", "train")
    assert call(bob, "GET", "/hub/api/dsportal/shares")[1]["with_me"] == []

"""A session's API token, as an attacker holds it, on the real dev cluster (real hub, Slurm, sessions).

The session's token is in the job's environment: the user's own code and, while
the session is shared, every guest's code can read it.  It must stop working
when the session ends, even when the hub restarted while the session ran (a
restarted hub keeps only the token's digest), and when a share ends: bob, a
guest who copied it, then has nothing left, while alice's session goes on with
a new token the hub hands it, without a restart.  Tokens that earlier hubs left
behind are removed when the hub starts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spawner.contract import TOKEN_OFFER_HEADER, TOKEN_PUSH_PATH, offer_proof, token_digest
from tests.support.cluster import Cluster, url_for
from tests.support.http import json_request, wait_until
from tests.support.jobs import JobsClient
from tests.support.jupyter import closed_after, run_code

from .test_sessions import call, ready

# the dev cluster to itself (tests/support/lanes.py): restarts the hub; floods it with token requests
pytestmark = pytest.mark.alone

SCRIPT = "tokens/hello.py"
READ_TOKEN = "import os; print(os.environ['JUPYTERHUB_API_TOKEN'])"


def session_token(cluster: Cluster, owner: str, server: str = "") -> str:
    """The token in the session job's environment, read by code running in it (a kernel of the session)."""
    path = f"{owner}/{server}" if server else owner
    status, printed = run_code(cluster, path, "python3", READ_TOKEN)
    assert status == "ok", printed
    return printed.strip()


def submit(token: str) -> tuple[int, object]:
    return call(token, "POST", "/hub/api/dsportal/runs", {"path": SCRIPT, "hours": 0.1})


def test_a_sessions_token_ends_with_its_session_after_a_hub_restart(cluster):
    alice = JobsClient.for_user("alice")
    alice.write(SCRIPT, "print('hello')\n")
    # what an earlier hub left behind: a server token of a session that ended while it was down
    left = cluster.request(
        "POST",
        "/hub/api/users/alice/tokens",
        {"note": "Server at /user/alice/", "scopes": ["access:servers!server=alice/"]},
    )[1]["token"]
    assert call(left, "GET", "/hub/api/user")[0] == 200
    assert call(alice.token, "POST", "/hub/api/users/alice/server", {"gpus": 0, "hours": 1})[0] in (201, 202)
    ready(cluster, "alice", "")
    old = session_token(cluster, "alice")
    assert call(old, "GET", "/hub/api/user")[0] == 200  # the session's own token works while it runs

    Cluster.restart_hub()
    wait_until(lambda: (cluster.server("alice") or {}).get("ready"), 60, "alice's session ready again")
    assert call(old, "GET", "/hub/api/user")[0] == 200  # the restart kept the running session's token
    assert call(left, "GET", "/hub/api/user")[0] == 403  # and removed the one left behind

    cluster.stop("alice")
    status, _ = call(old, "GET", "/hub/api/user")
    assert status == 403, "the ended session's token still works"
    status, answer = submit(old)
    assert status == 403, answer
    assert call(old, "POST", "/hub/api/dsportal/session/extend")[0] == 403

    # a new session of the same name: the old token does not come back to life
    assert call(alice.token, "POST", "/hub/api/users/alice/server", {"gpus": 0, "hours": 1})[0] in (201, 202)
    ready(cluster, "alice", "")
    assert call(old, "GET", "/user/alice/api/status")[0] == 403
    assert submit(old)[0] == 403


def fresh_tokens(cluster: Cluster, user: str, count: int) -> list[str]:
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda i: cluster.user_token(user, f"flood {i}"), range(count)))


def flood(tokens: list[str], path: str) -> list[int]:
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda token: call(token, "GET", path)[0], tokens))


def token_questions(cluster: Cluster) -> int:
    """How many times sessions asked the hub whose an offered token is (JupyterHub's request metric)."""
    status, text = cluster.request("GET", "/hub/metrics")
    assert status == 200
    return sum(
        round(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("jupyterhub_request_duration_seconds_count{") and "TokenCheckHandler" in line
    )


def offers(count: int, held: str = "") -> dict[int, int]:
    """Token offers to alice's session through the proxy (anyone who reaches it may send them): a stranger's, or,
    with `held`, proven with that token, as whoever held it (a guest) can."""
    url = url_for("/user/alice/" + TOKEN_PUSH_PATH)

    def offer(_) -> int:
        token = secrets.token_hex(16)
        headers = {TOKEN_OFFER_HEADER: offer_proof(token_digest(held), token)} if held else {}
        return json_request("POST", url, {"token": token}, headers=headers)[0]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(Counter(pool.map(offer, range(count))))


def last_activity(cluster: Cluster) -> datetime:
    return datetime.fromisoformat(cluster.server("alice")["last_activity"].replace("Z", "+00:00"))


def test_a_revoked_guest_keeps_nothing_and_the_owners_session_goes_on(cluster):
    alice = JobsClient.for_user("alice")
    alice.write(SCRIPT, "print('hello')\n")
    bob = cluster.user_token("bob")
    assert call(alice.token, "POST", "/hub/api/users/alice/server", {"gpus": 0, "hours": 1})[0] in (201, 202)
    ready(cluster, "alice", "")
    status, share = call(alice.token, "POST", "/hub/api/dsportal/shares", {"server": "", "user": "bob", "hours": 1})
    assert status == 200, share

    # bob, a guest, runs code as alice in her session and copies its token
    copied = session_token(Cluster(bob), "alice")
    assert call(copied, "GET", "/user/alice/api/kernels")[0] == 200  # the session admits it (as alice)
    # ... and floods the session with 1,000 fresh tokens of his, each admitted as a guest
    guest_tokens = fresh_tokens(cluster, "bob", 1000)
    started = time.monotonic()
    assert set(flood(guest_tokens, "/user/alice/api/status")) == {200}
    print(f"1,000 guest tokens admitted in {time.monotonic() - started:.1f} s")

    # ... and keeps a kernel connection open with the copy (it authenticates as alice, not as a guest)
    status, kernel = call(copied, "POST", "/user/alice/api/kernels", {"name": "python3"})
    assert status == 201, kernel

    def revoke() -> None:
        assert call(alice.token, "DELETE", "/hub/api/dsportal/shares?server=&user=bob")[0] == 200

    revoked_at = datetime.now(UTC)
    code = asyncio.run(closed_after(f"/user/alice/api/kernels/{kernel['id']}/channels", copied, revoke))
    assert code == 4403, f"the connection opened with the copied token ended with {code}"

    # nothing bob copied works any more, at once
    assert call(copied, "GET", "/hub/api/user")[0] == 403
    assert call(copied, "POST", "/hub/api/dsportal/session/extend")[0] == 403
    status, answer = submit(copied)
    assert status == 403, answer
    assert call(copied, "GET", "/user/alice/api/kernels")[0] == 403
    assert call(bob, "GET", "/user/alice/api/status")[0] == 403
    refused = flood(guest_tokens, "/user/alice/api/status")
    assert set(refused) == {403}, {code: refused.count(code) for code in set(refused)}

    # alice's session goes on without a restart, with a token bob never saw
    assert call(alice.token, "GET", "/user/alice/api/kernels")[0] == 200
    status, extended = call(alice.token, "POST", "/user/alice/dsportal/session/extend")
    assert status == 200, extended
    assert extended["session"]["state"] == "running"
    # the session's activity reaches the hub (JupyterHub's own report, with the session's new token)
    assert run_code(cluster, "alice", "python3", "print(1)")[0] == "ok"
    wait_until(lambda: last_activity(cluster) > revoked_at, 60, "alice's activity reported after the revoke", every=1)

    # a stranger floods alice's session with token offers: the session refuses each by itself (it carries no proof
    # keyed by the session's token), and the hub is asked about none (each was a question to the hub, ~130 a
    # second in the soak's flood, which slowed the hub for everyone)
    asked = token_questions(cluster)
    assert asked >= 1  # the hub's own offer above was asked about: the metric counts them
    started = time.monotonic()
    assert offers(64) == {403: 64}
    print(f"64 strangers' offers on 8 connections answered in {time.monotonic() - started:.1f} s (each held 0.5 s)")
    # ... and so are bob's, proven with the token he copied, which the session no longer holds
    assert offers(20, held=copied) == {403: 20}
    assert token_questions(cluster) == asked
    # ... and the refusals are not written one by one into alice's log (counted once a minute instead)
    log = Path(f"/home/alice/.dsportal-session-{cluster.job_of('alice')}.log").read_text()
    assert "403 POST /user/alice/dsportal/session/token" not in log

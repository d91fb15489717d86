"""Every portal endpoint bounds its request body and each caller's rate, through a real hub (mock Slurm).

The attacks: a logged-in user (or anyone, before logging in) posts a 30 MB JSON body to a portal API
(the hub read and parsed it whole: ~0.7 s stalled, its memory 135 -> 280 MiB); a user's script sends
requests as fast as it can.  The hub's own port, as compute nodes reach it (through the proxy a cut-off
upload reads as the proxy's 503).
"""

from __future__ import annotations

import json
import re

import psutil
import pytest
from jupyterhub import apihandlers

from spawner.hub.wiring import routes
from tests.support.http import raw_request, wait_until
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data

MiB = 1024 * 1024
RATE, BURST = 6, 10  # a minute, at once: this hub's settings (the shipped defaults are 300 and 150)
SAMPLE_VALUES = ("alice", "1", "0123456789ab", "")


@pytest.fixture(scope="module")
def a_limited_hub(tmp_path_factory):
    """A real hub whose portal endpoints allow 6 requests a minute per caller, 10 at once."""
    root = tmp_path_factory.mktemp("limits")
    mock = MockSlurm(root / "mockslurm")
    portal = config_data(mock)
    portal["hub"] = {**portal["hub"], "api_rate_per_minute": RATE, "api_burst": BURST}
    hub = HubProcess(root, portal)
    hub.mock = mock  # what sbatch was given
    hub.start()
    yield hub
    hub.stop()


def sample_path(pattern: str) -> str:
    """A path the route `pattern` serves: each group filled with a value it accepts (pure)."""

    def fill(group: re.Match) -> str:
        literal = re.sub(r"\\(.)", r"\1", group.group(1))
        for value in (*SAMPLE_VALUES, literal):
            if re.fullmatch(group.group(1), value):
                return value
        raise AssertionError(f"no sample for {group.group(0)} in {pattern}")

    return re.sub(r"\(((?:[^()]|\([^()]*\))*)\)", fill, pattern)


def portal_paths() -> list[str]:
    """Every route the portal serves (its own and the JupyterHub handlers it replaces), as /hub/... paths."""
    portal = {route[1] for route in routes.ADDED} | set(routes.REPLACED.values())
    served = routes.installed(list(apihandlers.default_handlers))
    return sorted({"/hub" + sample_path(route[0]) for route in served if route[1] in portal})


@pytest.fixture(scope="module")
def a_hub(a_hub_and_its_slurm) -> HubProcess:
    """A real hub with the shipped limits (65536 bytes a body)."""
    return a_hub_and_its_slurm[0]


def hub_port_url(hub: HubProcess, path: str) -> str:
    return hub.hub_api.removesuffix("/hub/api") + path


def test_the_portal_paths_cover_its_apis_pages_and_the_replaced_ones():
    paths = portal_paths()
    for expected in (
        "/hub/api/dsportal/session/usage",
        "/hub/api/dsportal/runs/1/cancel",
        "/hub/api/users/alice/server",
        "/hub/dsportal/status",
        "/hub/dsportal/static/plotly.min.js",
    ):
        assert expected in paths, paths
    assert len(paths) >= 20


@pytest.mark.parametrize("method", ["POST", "GET"])  # tornado reads a GET's body too
@pytest.mark.parametrize("path", portal_paths())
def test_an_oversize_body_is_refused_with_words_before_it_is_read(a_hub, path, method):
    """A declared 30 MB body, sent the way curl sends a large upload (Expect: 100-continue): 413 at once."""
    headers = {"Content-Type": "application/json", "Content-Length": str(30 * MiB), "Expect": "100-continue"}
    answer = raw_request(method, hub_port_url(a_hub, path), headers, timeout=5)
    assert isinstance(answer, tuple), f"{path}: {answer} (the hub waited for the 30 MB to read it)"
    status, body, _ = answer
    if method == "POST" and path.startswith("/hub/dsportal/static/"):  # plotly.min.js, the home page's script
        # a static file takes no POST: tornado's XSRF check refuses it before any handler code, and the hub's
        # server reads no body over hub.max_body_bytes (test_jupyterhubs_own_endpoints_...)
        assert status == 403, (path, status, body)
        return
    assert status == 413, (path, status, body)
    message = json.loads(body)["message"]
    assert "the portal takes at most 65536 bytes here" in message and "Send only the fields" in message


def hub_memory(hub: HubProcess) -> int:
    return psutil.Process(hub.proc.pid).memory_info().rss


def test_a_30_mb_body_sent_anyway_or_chunked_is_never_held_by_the_hub(a_hub):
    """The attacker does not wait for the hub's answer: the body comes all the same, declared or chunked."""
    url = hub_port_url(a_hub, "/hub/api/dsportal/session/usage")
    payload = b'{"gpus": "' + b"x" * (30 * MiB) + b'"}'
    before = hub_memory(a_hub)
    declared = {"Content-Type": "application/json", "Content-Length": str(len(payload))}
    answers = [raw_request("POST", url, declared, [payload], timeout=20) for _ in range(3)]
    piece = b"x" * MiB
    chunked = [f"{len(piece):x}\r\n".encode() + piece + b"\r\n"] * 30 + [b"0\r\n\r\n"]
    answers.append(raw_request("POST", url, {"Transfer-Encoding": "chunked"}, chunked, timeout=20))
    grown = hub_memory(a_hub) - before
    assert grown < 10 * MiB, f"the hub's memory grew by {grown / MiB:.0f} MiB"
    assert all(a == "cut off" or a[0] in (400, 413) for a in answers), [
        a if isinstance(a, str) else a[0] for a in answers
    ]
    assert a_hub.api("GET", "/")[0] == 200  # and it answers as before


def test_jupyterhubs_own_endpoints_read_no_body_over_the_hubs_limit(a_hub):
    """JupyterHub's handlers are not the portal's: the hub's server itself stops at hub.max_body_bytes (1 MiB)."""
    url = hub_port_url(a_hub, "/hub/api/users/alice/tokens")
    headers = {"Content-Type": "application/json", "Content-Length": str(30 * MiB), "Expect": "100-continue"}
    answer = raw_request("POST", url, headers, timeout=5)
    assert answer == "cut off" or answer[0] == 400, answer  # tornado's "Content-Length too long"


def user_token(hub: HubProcess, name: str) -> str:
    status, body = hub.api("POST", f"/users/{name}/tokens", {"note": "limits", "expires_in": 3600})
    assert status in (200, 201), body
    return body["token"]


def test_a_user_over_the_rate_gets_429_with_words_and_others_go_on(a_limited_hub):
    alice, bob = user_token(a_limited_hub, "alice"), user_token(a_limited_hub, "bob")
    url = f"{a_limited_hub.url}/hub/api/dsportal/session"

    def ask(token: str):
        answer = raw_request("GET", url, {"Authorization": f"token {token}"}, timeout=30)
        assert isinstance(answer, tuple), answer
        return answer

    answers = [ask(alice) for _ in range(BURST + 2)]
    assert [a[0] for a in answers[:BURST]] == [200] * BURST
    status, body, headers = answers[-1]
    assert status == 429, [a[0] for a in answers]
    assert json.loads(body)["message"].startswith("Too many requests to the portal from you: at most 6 a minute")
    assert 1 <= int(headers["retry-after"]) <= 10
    assert ask(bob)[0] == 200  # bob's bucket is his own
    # the body of a refused request is kept by no one: sent as curl sends it through the proxy (which answers
    # `Expect: 100-continue` itself and passes the body on), it is read and dropped, and the 429 reaches the client
    refused = raw_request(
        "POST",
        f"{a_limited_hub.url}/hub/api/dsportal/session/usage",
        {"Authorization": f"token {alice}", "Content-Length": "60000", "Expect": "100-continue"},
        [b"x" * 60000],
        timeout=5,
    )
    assert isinstance(refused, tuple) and refused[0] == 429, refused


def test_a_flood_with_one_of_alices_tokens_leaves_her_other_credentials_their_own_rate(a_limited_hub):
    """The attack: a guest of alice's session floods the portal with the session's token (it authenticates as
    alice; the guest's code can read it in the session) so that alice's own requests (revoking the share,
    stopping the session) get 429.  The session's own token drains a bucket of that session's: it is refused,
    alice's own token still answers."""
    hub = a_limited_hub
    assert hub.api("POST", "/users/frank")[0] in (201, 409)  # a user of this test's own: the others' buckets are used
    assert hub.api("POST", "/users/frank/server", {"gpus": 0, "hours": 1})[0] in (201, 202)
    sbatch = wait_until(lambda: [c for c in hub.mock.calls("sbatch") if c["env"].get("USER") == "frank"], what="sbatch")
    copied = sbatch[0]["env"]["JUPYTERHUB_API_TOKEN"]  # the session's token, as its guests can read it
    her_own = user_token(hub, "frank")
    url = f"{hub.url}/hub/api/dsportal/session"

    def status(token: str) -> int:
        answer = raw_request("GET", url, {"Authorization": f"token {token}"}, timeout=30)
        assert isinstance(answer, tuple), answer
        return answer[0]

    flood = [status(copied) for _ in range(BURST + 2)]
    assert flood[:BURST] == [200] * BURST and flood[-1] == 429, flood
    assert status(her_own) == 200


def test_nobody_logged_in_cannot_leave_their_bucket_by_naming_another_address(a_limited_hub):
    """Tornado takes the client's address from X-Real-Ip whoever sends it: a caller who rotates it would escape
    the limit (or drain another person's address); only the proxy's own word counts."""
    url = f"{a_limited_hub.url}/hub/api/dsportal/partitions"
    answers = [
        raw_request("GET", url, {"X-Real-Ip": f"10.9.{i // 250}.{i % 250 + 1}"}, timeout=30) for i in range(BURST + 2)
    ]
    assert all(isinstance(a, tuple) for a in answers), answers
    assert answers[-1][0] == 429, [a[0] for a in answers]


def test_a_plain_static_file_of_the_portal_is_still_served_within_the_limits(a_hub):
    """The usage pages' plotly file is a tornado static-file handler (no JupyterHub token lookup): the limits must
    not turn it into a 500 (they did once, and the pages' plots stayed blank)."""
    answer = raw_request("GET", f"{a_hub.url}/hub/dsportal/static/plotly.min.js", {}, timeout=30)
    assert isinstance(answer, tuple) and answer[0] == 200, answer


def test_a_user_rotating_tokens_of_her_own_gets_no_fresh_bucket(a_limited_hub):
    """The attack: alice makes several tokens (or sends a random one beside her cookie) and rotates them, so that
    each request came from a "new" caller.  Every credential of hers drains one bucket: past the burst, 429."""
    assert a_limited_hub.api("POST", "/users/erin")[0] in (201, 409)  # a user of her own: the others' buckets are used
    tokens = [user_token(a_limited_hub, "erin") for _ in range(3)]
    url = f"{a_limited_hub.url}/hub/api/dsportal/session"
    statuses = [
        raw_request("GET", url, {"Authorization": f"token {tokens[i % 3]}"}, timeout=30)[0] for i in range(BURST + 2)
    ]
    assert statuses[:BURST] == [200] * BURST and statuses[-1] == 429, statuses

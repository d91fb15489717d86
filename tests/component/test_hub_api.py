"""The REST contract and the port callback, through a real JupyterHub and proxy (mock Slurm)."""

from __future__ import annotations

import pytest

from tests.support.http import wait_until


def server_token(mock, user: str) -> str:
    """The session's own API token, as the job received it in its environment."""
    calls = [c for c in mock.calls("sbatch") if c["env"].get("USER") == user]
    return calls[-1]["env"]["JUPYTERHUB_API_TOKEN"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"gpus": 5}, "gpus: 5 is out of range; choose a whole number from 0 to 4 for partition sxm2."),
        ({"partition": "nope"}, 'partition: "nope" is not offered here; choose one of sxm2, pcie.'),
        ({"hours": 13}, "hours: 13 is out of range; choose a number of hours above 0 and at most 12."),
        (
            {"gpus": 1, "mem": "1T"},
            'Unknown option(s) "mem"; allowed are partition, gpus, shards, hours, gpu_type, account, qos, continue_from.',
        ),
        ({"partition": "sxm2\n#SBATCH --uid=0"}, "partition: line breaks and NUL characters are not allowed."),
        ({"hours": "8%s%n"}, 'hours: "8%s%n" is not a number'),
    ],
)
def test_refused_options_are_400_with_the_reason_and_submit_nothing(a_hub_and_its_slurm, options, message):
    a_hub, mock_slurm = a_hub_and_its_slurm
    submitted = len(mock_slurm.calls("sbatch"))
    status, body = a_hub.api("POST", "/users/alice/server", options)
    assert status == 400, body
    assert body["message"].startswith(message)
    assert len(mock_slurm.calls("sbatch")) == submitted
    status, user = a_hub.api("GET", "/users/alice")
    assert user["servers"] == {}


def test_batchspawner_handler_is_not_served(a_hub_and_its_slurm):
    a_hub, _ = a_hub_and_its_slurm
    status, _ = a_hub.api("POST", "/batchspawner", {"port": 1234})
    assert status == 404


def test_start_port_callback_and_stop(a_hub_and_its_slurm, a_web_server):
    a_hub, mock_slurm = a_hub_and_its_slurm
    status, _ = a_hub.api("POST", "/users/alice/server", {"partition": "sxm2", "gpus": 2, "hours": 8})
    assert status in (201, 202)
    status, _ = a_hub.api("POST", "/users/bob/server", {})
    assert status in (201, 202)
    wait_until(lambda: len(mock_slurm.jobs()) == 2, what="two jobs submitted")
    jobs = {j["user"]: job_id for job_id, j in mock_slurm.jobs().items()}
    assert mock_slurm.jobs()[jobs["alice"]]["options"]["gres"] == "gpu:2"
    assert mock_slurm.jobs()[jobs["bob"]]["options"]["gres"] == "gpu:1"  # missing keys take defaults
    alice, bob = server_token(mock_slurm, "alice"), server_token(mock_slurm, "bob")
    assert alice != bob

    def callback(body=None, token=alice, raw=None):
        return a_hub.request("POST", f"{a_hub.hub_api}/dsportal/port", body, token=token, raw=raw)[0]

    a_web_server.token = alice  # alice's JupyterLab holds her session's token: it alone can prove it is hers
    port = a_web_server.port
    assert callback({"port": port}, token=None) == 403  # no credentials
    assert callback({"port": port}, token="not-a-token") == 403
    from tests.support.hub import ADMIN_TOKEN

    assert callback({"port": port}, token=ADMIN_TOKEN) == 400  # not a session's token
    assert callback({"port": port, "ip": "evil.example.org"}) == 400  # only the port
    assert callback({"port": port, "user": "bob"}, token=alice) == 400
    assert callback({"port": str(port)}) == 400
    assert callback({"port": 80}) == 400
    assert callback({"port": True}) == 400
    assert callback(raw=b"port=1234") == 400
    assert callback([port]) == 400
    # bob's token sets bob's port, never alice's
    assert callback({"port": port}, token=bob) == 201
    # one report per start: a session that switches ports during the readiness check is refused
    assert callback({"port": port + 1}, token=bob) == 409
    assert callback({"port": port}, token=bob) == 409

    mock_slurm.set_job(jobs["alice"], state="RUNNING", node="127.0.0.1")
    # the hub has seen the job run (it asked squeue since) and still waits for the port
    asked = len(mock_slurm.calls("squeue"))
    wait_until(lambda: len(mock_slurm.calls("squeue")) > asked + 1, what="the hub polling the running job")
    assert a_hub.api("GET", "/users/alice")[1]["servers"][""]["ready"] is False
    assert callback({"port": port}) == 201
    wait_until(lambda: a_hub.api("GET", "/users/alice")[1]["servers"].get("", {}).get("ready"), what="alice ready")
    assert callback({"port": port}) == 400  # only while starting

    status, _ = a_hub.api("DELETE", "/users/alice/server")
    assert status in (202, 204)
    wait_until(lambda: not a_hub.api("GET", "/users/alice")[1]["servers"], what="alice stopped")
    assert [c["user"] for c in mock_slurm.calls("scancel")][:1] == ["alice"]
    assert mock_slurm.jobs()[jobs["alice"]]["state"] == "CANCELLED"
    log = a_hub.log.read_text()
    assert alice not in log and bob not in log  # tokens are never logged


def test_tokens_users_create_expire(a_hub_and_its_slurm):
    a_hub, _ = a_hub_and_its_slurm
    a_hub.api("POST", "/users/alice")
    status, token = a_hub.api("POST", "/users/alice/tokens", {"note": "no expiry asked"})
    assert status == 201, token
    assert token["expires_at"] is not None  # the portal's maximum (hub.token_max_days) applies
    status, body = a_hub.api("POST", "/users/alice/tokens", {"note": "a year", "expires_in": 365 * 86400})
    assert status == 400 and "must not exceed" in body["message"]


def test_a_link_never_starts_a_session(a_hub_and_its_slurm):
    from tests.support.hub import FormBrowser

    a_hub, mock_slurm = a_hub_and_its_slurm
    a_hub.api("DELETE", "/users/bob/server")  # an earlier test of this hub may have left bob's start pending
    wait_until(lambda: not a_hub.api("GET", "/users/bob")[1]["servers"], what="bob without a server")
    bob = FormBrowser(a_hub.url)
    assert bob.login("bob", "any")[0] == 302
    submitted = len(mock_slurm.calls("sbatch"))
    status, page, _ = bob.get("/hub/spawn?opt-gpus=4&opt-hours=12")  # what a link on anyone's page does
    assert status == 200
    assert "A link cannot start a session: choose the resources below and press Start." in page
    assert 'name="gpus"' in page  # the form, to start deliberately
    assert len(mock_slurm.calls("sbatch")) == submitted
    assert a_hub.api("GET", "/users/bob")[1]["servers"] == {}


def test_the_runs_api_answers_at_its_01_name_too(a_hub_and_its_slurm):
    """0.1 named the runs API /dsportal/jobs: a session started before an upgrade (its JupyterLab extension) and
    an admin's scripts ask there, and get what /dsportal/runs answers until 0.3."""
    a_hub, _ = a_hub_and_its_slurm
    a_hub.api("POST", "/users/dave")
    status, token = a_hub.api("POST", "/users/dave/tokens", {"note": "scripts"})
    assert status == 201, token
    now = a_hub.api("GET", "/dsportal/runs", token=token["token"])
    assert now[0] == 200 and now[1]["jobs"] == [], now
    assert a_hub.api("GET", "/dsportal/jobs", token=token["token"]) == now
    refused = a_hub.api("POST", "/dsportal/runs", {"path": "x.ipynb", "hours": 99}, token=token["token"])
    assert refused[0] == 400, refused
    assert a_hub.api("POST", "/dsportal/jobs", {"path": "x.ipynb", "hours": 99}, token=token["token"]) == refused


def test_a_hetjob_components_id_reaches_the_runs_api_as_a_browser_writes_it(a_hub_and_its_slurm):
    """JupyterLab and the home page write a job id with encodeURIComponent: 82+1 (a heterogeneous job's component)
    arrives as 82%2B1.  It reaches the handler, which looks for job 82+1 (before, no route matched it: a 404
    without words, so such a job's log and cancel could not be reached from the pages)."""
    a_hub, _ = a_hub_and_its_slurm
    a_hub.api("POST", "/users/dave")
    status, token = a_hub.api("POST", "/users/dave/tokens", {"note": "scripts"})
    assert status == 201, token
    status, body = a_hub.api("GET", "/dsportal/runs/82%2B1/log?lines=5", token=token["token"])
    assert (status, body["message"]) == (
        404,
        "Job 82+1 was not run from the portal; its output is where its own script wrote it.",
    )

"""A hub without hub.subdomain_host (every session under the hub's one origin) offers no apps and shares nothing:
a page of alice's session opened by bob would run as the hub's origin with bob's cookies (real hub, mock Slurm)."""

from __future__ import annotations

import json

import yaml

from spawner.contract import SESSION_VAR
from tests.support.http import wait_until
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data


def a_running_session(a_hub, mock_slurm, a_web_server, user: str) -> str:
    """`user`'s unnamed session started, its job running and its (stand-in) JupyterLab ready: -> its job id."""
    status, _ = a_hub.api("POST", f"/users/{user}/server", {})
    assert status in (201, 202)
    job = wait_until(
        lambda: next((i for i, j in mock_slurm.jobs().items() if j["user"] == user and j["state"] == "PENDING"), None),
        what=f"{user}'s job submitted",
    )
    token = [c for c in mock_slurm.calls("sbatch") if c["env"].get("USER") == user][-1]["env"]["JUPYTERHUB_API_TOKEN"]
    a_web_server.token = token
    mock_slurm.set_job(job, state="RUNNING", node="127.0.0.1")
    report = {"port": a_web_server.port}
    wait_until(
        lambda: a_hub.request("POST", f"{a_hub.hub_api}/dsportal/port", report, token=token)[0] == 201,
        what=f"{user}'s port taken",
    )
    wait_until(lambda: a_hub.api("GET", f"/users/{user}")[1]["servers"].get("", {}).get("ready"), what="ready")
    return job


def test_without_per_user_origins_no_app_is_offered_and_no_share_is_made(a_hub_and_its_slurm, a_web_server):
    a_hub, mock_slurm = a_hub_and_its_slurm
    a_hub.api("POST", "/users/bob")  # a portal user alice could name
    a_running_session(a_hub, mock_slurm, a_web_server, "alice")
    try:
        spec = json.loads(
            [c for c in mock_slurm.calls("sbatch") if c["env"].get("USER") == "alice"][-1]["env"][SESSION_VAR]
        )
        assert spec["apps"]["offered"] == []  # the session's launcher shows no app

        status, token = a_hub.api("POST", "/users/alice/tokens", {"note": "alice's script"})
        assert status == 201, token
        alice = token["token"]
        status, shares = a_hub.api("GET", "/dsportal/shares", token=alice)
        assert status == 200 and shares["sharing"]["enabled"] is False  # the home page shows no Share button
        status, body = a_hub.api("POST", "/dsportal/shares", {"server": "", "user": "bob", "hours": 1}, token=alice)
        assert (status, body["message"]) == (403, "Sharing sessions is turned off on this portal.")
        # JupyterHub's own share API (an admin's, by name) is refused as well
        status, body = a_hub.api("POST", "/shares/alice/", {"user": "bob"})
        assert (status, body["message"]) == (403, "Sharing sessions is turned off on this portal.")
        bob = a_hub.api("POST", "/users/bob/tokens", {"note": "bob's script"})[1]["token"]
        status, shared = a_hub.api("GET", "/dsportal/shares", token=bob)
        assert (status, shared["with_me"]) == (200, [])  # bob may not open alice's pages
    finally:
        a_hub.api("DELETE", "/users/alice/server")
        wait_until(lambda: not a_hub.api("GET", "/users/alice")[1]["servers"], what="alice stopped")


def test_shares_made_with_per_user_origins_end_when_the_hub_loses_them(tmp_path, a_web_server):
    """An upgrade of a portal without hub.subdomain_host (sharing was on by default): the shares of a session
    that outlives the hub's restart end, and with them the guest's access."""
    mock = MockSlurm(tmp_path / "mockslurm")
    hub = HubProcess(tmp_path, config_data(mock))
    one_origin = hub.portal_yaml.read_text()
    portal = yaml.safe_load(one_origin)
    portal["hub"]["subdomain_host"] = f"http://localhost:{hub.port}"
    hub.portal_yaml.write_text(yaml.safe_dump(portal))
    hub.start()
    try:
        hub.api("POST", "/users/bob")
        a_running_session(hub, mock, a_web_server, "alice")
        alice = hub.api("POST", "/users/alice/tokens", {"note": "alice's script"})[1]["token"]
        bob = hub.api("POST", "/users/bob/tokens", {"note": "bob's script"})[1]["token"]
        status, share = hub.api("POST", "/dsportal/shares", {"server": "", "user": "bob", "hours": 1}, token=alice)
        assert status == 200, share

        def bob_may_open() -> list:
            return [s["owner"] for s in hub.api("GET", "/dsportal/shares", token=bob)[1]["with_me"]]

        assert bob_may_open() == ["alice"]
        hub.stop()
        hub.portal_yaml.write_text(one_origin)
        hub.start()
        wait_until(lambda: hub.api("GET", "/users/alice")[1]["servers"].get("", {}).get("ready"), what="kept")
        wait_until(lambda: bob_may_open() == [], what="bob's share ended")
        assert "alice's share of alice with user bob has ended: sharing is off" in hub.log.read_text()
    finally:
        hub.stop()

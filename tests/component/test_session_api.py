"""The home page's session API and extensions, through a real JupyterHub and proxy (mock Slurm)."""

from __future__ import annotations

from tests.support.http import wait_until


def extend(hub, token):
    return hub.request("POST", f"{hub.hub_api}/dsportal/session/extend", {}, token=token)


def test_the_session_card_follows_the_job_and_extensions_stay_within_the_limits(a_hub_and_its_slurm, a_web_server):
    hub, mock = a_hub_and_its_slurm
    status, token = hub.api("POST", "/users/alice/tokens", {"note": "dashboard"})
    assert status == 201, token
    mine = token["token"]
    status, page = hub.api("GET", "/dsportal/session", token=mine)
    unnamed = {"name": "", "session": {"state": "none"}, "last_end": "", "server_url": "", "usage": []}
    assert status == 200
    assert {k: page[k] for k in ("session", "history", "last_end", "presets", "server_url", "sessions")} == {
        "session": {"state": "none"},
        "history": [],
        "last_end": "",
        "presets": [],
        "server_url": "",
        "sessions": [unnamed],  # the unnamed session's card, the only one
    }
    assert (page["limits"]["max_per_user"], page["limits"]["max_gpus_per_user"]) == (3, 0)
    assert hub.api("GET", "/dsportal/session", token=None)[0] == 403
    assert hub.api("GET", "/dsportal/session")[0] == 403  # a service's token: no session of its own

    assert hub.api("POST", "/users/alice/server", {"gpus": 2, "hours": 8})[0] in (201, 202)
    wait_until(lambda: mock.jobs(), what="alice's job submitted")
    [job_id] = mock.jobs()
    submitted = [c for c in mock.calls("sbatch") if c["env"].get("USER") == "alice"][-1]
    server_token = submitted["env"]["JUPYTERHUB_API_TOKEN"]
    assert "--signal=B:USR2@180" in submitted["argv"]  # Slurm warns the session 3 minutes before its end
    wait_until(
        lambda: hub.api("GET", "/dsportal/session", token=mine)[1]["session"]["state"] == "queued",
        what="the card showing the queued job",
    )
    status, answer = extend(hub, server_token)
    assert (status, answer["message"]) == (409, "You have no running session to extend.")

    mock.set_job(job_id, state="RUNNING", node="127.0.0.1", end="2026-11-22T16:00:00")
    a_web_server.token = server_token
    assert (
        hub.request("POST", f"{hub.hub_api}/dsportal/port", {"port": a_web_server.port}, token=server_token)[0] == 201
    )
    wait_until(lambda: hub.api("GET", "/users/alice")[1]["servers"].get("", {}).get("ready"), what="alice ready")
    card = hub.api("GET", "/dsportal/session", token=mine)[1]["session"]
    assert {
        k: card[k] for k in ("state", "job_id", "node", "gpus", "cores", "memory_gb", "limit", "end", "extend")
    } == {
        "state": "running",
        "job_id": job_id,
        "node": "127.0.0.1",
        "gpus": 2,
        "cores": 16,
        "memory_gb": 96.0,
        "limit": "8 h",
        "end": "2026-11-22T16:00:00",
        "extend": {"allowed": True, "why_not": "", "step": "1 h"},
    }

    # JupyterLab's button: the session's own server asks with its token; the root helper runs through sudo
    status, answer = extend(hub, server_token)
    assert status == 200, answer
    assert (answer["session"]["limit"], answer["session"]["end"]) == ("9 h", "2026-11-22T17:00:00")
    assert [(c["argv"], c["user"]) for c in mock.calls("extend")] == [([job_id, "540"], "root")]
    for _ in range(3):  # the home page's button: the user's own login (here a token of theirs)
        assert extend(hub, mine)[0] == 200
    status, answer = extend(hub, mine)
    assert (status, answer["message"]) == (
        400,
        "Your session already has 12 h; with extensions a session may last at most 12 h here.",
    )
    assert len(mock.calls("extend")) == 4  # the refusal asked no one

    # bob's token reaches bob's session only: he has none
    status, bobs = hub.api("POST", "/users/bob/tokens", {"note": "x"})
    assert extend(hub, bobs["token"])[0] == 409

    # the session reports what it used with its own token; the card shows it, the ended session's history keeps it
    report = {
        "gpus": [
            {"index": 0, "samples": 4, "busy_samples": 4, "utilization_sum": 320, "utilization_peak": 90},
            {"index": 1, "samples": 4, "memory_peak_mib": 300, "memory_total_mib": 32768},
        ],
        "samples": 4,
        "cpu_seconds": 720.0,
        "memory_peak_mib": 2048,
        "seconds": 600.0,
    }
    usage = f"{hub.hub_api}/dsportal/session/usage"
    assert hub.request("POST", usage, {**report, "samples": -1}, token=server_token)[0] == 400
    status, answer = hub.request("POST", usage, report, token=mine)
    assert (status, answer["message"]) == (
        403,
        "Only a running session's own server reports what it used, with its token.",
    )  # alice's own token is no session's: a report comes from the session only
    assert hub.request("POST", usage, report, token=bobs["token"])[0] == 403
    # alice's own session forges a tally of almost no seconds: her card still answers (round(inf) raised once)
    forged = {"cpu_seconds": 1e12, "seconds": 5e-324}
    assert hub.request("POST", usage, forged, token=server_token)[0] == 204
    status, page = hub.api("GET", "/dsportal/session", token=mine)
    assert (status, page["sessions"][0]["usage"][0]) == (200, "CPU: 100% of 16 cores over under 1 min")
    assert hub.request("POST", usage, report, token=server_token)[0] == 204
    [entry] = hub.api("GET", "/dsportal/session", token=mine)[1]["sessions"]
    assert entry["usage"] == [
        "GPU 0: 80% on average, peak 90%, memory peak 0.0 GB of 0.0 GB",
        "GPU 1: 0% on average, peak 0%, memory peak 0.3 GB of 32.0 GB",
        "CPU: 8% of 16 cores over 10 min",
        "Memory: peak 2.0 GB of 96.0 GB (2%)",
        "Idle: 0% of the time",
    ]

    assert hub.api("DELETE", "/users/alice/server")[0] in (202, 204)
    wait_until(lambda: not hub.api("GET", "/users/alice")[1]["servers"], what="alice stopped")
    page = hub.api("GET", "/dsportal/session", token=mine)[1]
    assert page["session"] == {"state": "none"}
    [last] = page["history"]
    assert (last["job_id"], last["options"], last["summary"]) == (
        job_id,
        {"gpus": 2, "hours": 8},
        "2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2",
    )
    assert last["why"].startswith("Stopped through the portal at ")
    assert last["usage"]["advice"] == "1 of 2 GPUs did work; next time ask for 1."


def test_the_helpers_refusal_reaches_the_user_in_its_words(a_hub_and_its_slurm, a_web_server):
    hub, mock = a_hub_and_its_slurm
    assert hub.api("POST", "/users/bob/server", {"gpus": 1, "hours": 2})[0] in (201, 202)
    wait_until(
        lambda: [j for j in mock.jobs().values() if j["user"] == "bob" and j["state"] == "PENDING"],
        what="bob's job submitted",
    )
    job_id = next(i for i, j in mock.jobs().items() if j["user"] == "bob" and j["state"] == "PENDING")
    token = [c for c in mock.calls("sbatch") if c["env"].get("USER") == "bob"][-1]["env"]["JUPYTERHUB_API_TOKEN"]
    mock.set_job(job_id, state="RUNNING", node="127.0.0.1")
    a_web_server.token = token
    assert hub.request("POST", f"{hub.hub_api}/dsportal/port", {"port": a_web_server.port}, token=token)[0] == 201
    wait_until(lambda: hub.api("GET", "/users/bob")[1]["servers"].get("", {}).get("ready"), what="bob ready")
    mock.set_job(job_id, state="SUSPENDED")  # Slurm's view changed; the helper checks it as root
    status, answer = extend(hub, token)
    assert (status, answer["message"]) == (400, f"Job {job_id} is not running: only a running session is extended.")
    mock.fail("extend", "unreachable")
    status, answer = extend(hub, token)
    assert status == 503 and "could not be extended right now" in answer["message"]
    mock.heal()
    mock.set_job(job_id, state="RUNNING")  # (the mock's scancel ends pending and running jobs only)
    assert hub.api("DELETE", "/users/bob/server")[0] in (202, 204)
    wait_until(lambda: not hub.api("GET", "/users/bob")[1]["servers"], what="bob stopped")


def test_the_home_pages_one_request_brings_what_is_free_and_survives_a_slurm_outage(a_hub_and_its_slurm):
    hub, mock = a_hub_and_its_slurm
    status, token = hub.api("POST", "/users/carol/tokens", {"note": "home page"})
    assert status == 201, token
    mine = token["token"]
    status, plain = hub.api("GET", "/dsportal/session", token=mine)
    assert status == 200 and "partitions" not in plain and "partitions_error" not in plain
    status, both = hub.api("GET", "/dsportal/session?free=1", token=mine)
    assert status == 200
    status, free = hub.api("GET", "/dsportal/partitions", token=mine)
    assert both == {**plain, "partitions": free["partitions"]}

    mock.fail("sinfo", "unreachable")
    try:
        # the hub's sinfo answer is cached for a moment; once it asks again, the card still comes
        answer = wait_until(
            lambda: (a := hub.api("GET", "/dsportal/session?free=1", token=mine)[1]) and "partitions_error" in a and a,
            timeout=60,
            what="the outage in the answer",
        )
    finally:
        mock.heal()
    assert answer == {
        **plain,
        "partitions_error": "The scheduler (Slurm) is not answering; what is free cannot be shown right now.",
    }

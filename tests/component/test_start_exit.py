"""A session whose server exits while it starts (real hub, mock Slurm, the port keeper's real report).

The keeper holds the session's port after its server exited, so the job runs on and Slurm lists it RUNNING: only
the keeper's report tells the hub.  The start must fail then, within seconds, with the session log's last lines on
the progress page, and the job must be cancelled: before, the hub answered 503 "still starting" to every report
and the start waited for the port until start_timeout (15 min), the job's GPUs held.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request

from spawner.jupyter.session.keeper import report_ended
from tests.support.http import wait_until
from tests.support.hub import ADMIN_TOKEN

GIVE_UP = 20.0  # seconds the keeper's reports are followed before the test calls the start stuck


def follow_progress(hub, user: str, events: list[dict]) -> threading.Thread:
    """Read the progress stream of `user`'s start into `events` until it ends, as the progress page does."""

    def read() -> None:
        request = urllib.request.Request(
            f"{hub.url}/hub/api/users/{user}/server/progress", headers={"Authorization": f"token {ADMIN_TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=60) as stream:
            for raw in stream:
                line = raw.decode().strip()
                if line.startswith("data:"):
                    events.append(json.loads(line[5:]))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_server_that_exits_while_starting_fails_the_start_within_seconds_and_its_job_ends(a_hub_and_its_slurm):
    hub, mock = a_hub_and_its_slurm
    assert hub.api("POST", "/users/bob/server", {"gpus": 1, "hours": 0.02})[0] in (201, 202)
    job_id = wait_until(
        lambda: next((i for i, j in mock.jobs().items() if j["user"] == "bob" and j["state"] == "PENDING"), None),
        what="bob's job submitted",
    )
    token = [c for c in mock.calls("sbatch") if c["env"].get("USER") == "bob"][-1]["env"]["JUPYTERHUB_API_TOKEN"]
    mock.set_job(job_id, state="RUNNING", node="127.0.0.1")
    log = hub.root / "homes" / "bob" / f".dsportal-session-{job_id}.log"
    # what the session wrote before its server died (Slurm's warning while JupyterLab still imported, as seen)
    log.write_text(
        f"dsportal: job {job_id} of bob on node001\n"
        "[I LabApp] importing JupyterLab\n"
        "dsportal: the session's server has exited (140); the port stays held until the hub stops routing to it\n"
    )
    assert hub.api("GET", "/users/bob")[1]["servers"][""]["pending"] == "spawn"
    events: list[dict] = []
    reader = follow_progress(hub, "bob", events)
    wait_until(lambda: events, what="the progress page's first event")
    asked = time.monotonic()

    def pause(seconds: float) -> None:  # the keeper's wait between two reports, bounded here
        assert time.monotonic() - asked < GIVE_UP, "the hub still answers 'still starting' to the server's end"
        time.sleep(seconds)

    answer = report_ended(hub.hub_api, token, pause=pause)  # the port keeper's own call
    answered = time.monotonic() - asked
    assert answer == "the hub has stopped routing to this session (200)"
    assert answered < 5, answered  # the start failed first (no route was added), then the report was answered

    reader.join(30)
    [failed] = [e for e in events if e.get("failed")]
    assert failed["message"].startswith(
        f"Spawn failed: JupyterLab exited while your session (job {job_id}) was starting; its job is cancelled. "
        f"Last lines of {log}:\n"
    )
    assert failed["message"].endswith(
        "[I LabApp] importing JupyterLab\n"
        "dsportal: the session's server has exited (140); the port stays held until the hub stops routing to it"
    )
    # the failed start's cleanup is the normal stop: scancel as bob, then Slurm's confirmation
    wait_until(lambda: mock.jobs()[job_id]["state"] == "CANCELLED", what="bob's job cancelled")
    assert [c["user"] for c in mock.calls("scancel") if c["argv"] == [job_id]] == ["bob"]
    wait_until(lambda: not hub.api("GET", "/users/bob")[1]["servers"], what="bob's session gone")
    status, mine = hub.api("POST", "/users/bob/tokens", {"note": "home page"})
    assert status == 201, mine
    [last] = [
        h for h in hub.api("GET", "/dsportal/session", token=mine["token"])[1]["history"] if h["job_id"] == job_id
    ]
    assert last["why"].startswith("Your session's server exited while it started at ")

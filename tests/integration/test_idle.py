"""Idle sessions give their GPUs back, on the real dev cluster: jupyterhub-idle-culler and what sessions report.

The dev config stops idle sessions of the `debug` partition after 30 s
(sessions report their use every 10 s; the cullers look every 10 s).  The
dev cluster's virtual GPUs answer NVML through a stand-in driver library
(deploy/dev/fakenvml.c) whose readings the test sets.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.support.cluster import HUB, NVML_READINGS, job_gpus, url_for
from tests.support.demo import password_of
from tests.support.hub import FormBrowser
from tests.support.hublog import HUB_LOG

# the side lane's people, beside the other tests (tests/support/lanes.py)
pytestmark = pytest.mark.side

DEBUG = {"partition": "debug", "gpus": 1, "hours": 1}
LONG = {"partition": "sxm2", "gpus": 0, "hours": 1}  # the dev config's 2-hour idle timeout


class PrintingTerminal:
    """A terminal in the user's session that prints every 3 s, watched through its websocket (as JupyterLab does)."""

    def __init__(self, cluster, user: str):
        status, term = cluster.request("POST", f"/user/{user}/api/terminals")
        assert status == 200, term
        self.url = url_for(f"/user/{user}/terminals/websocket/{term['name']}").replace("https://", "wss://")
        self.token = cluster.token
        self.lines = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()

    async def _run(self):
        socket = await websocket_connect(HTTPRequest(self.url, headers={"Authorization": f"token {self.token}"}))
        socket.write_message(json.dumps(["stdin", "while true; do echo tick; sleep 3; done\r"]))
        while not self.stop.is_set():
            message = await asyncio.wait_for(socket.read_message(), 30)
            if message is None:
                return
            if "tick" in message:
                self.lines += 1
        socket.close()


def home_page(user: str) -> str:
    browser = FormBrowser(HUB)
    assert browser.login(user, password_of(user))[0] == 302
    return browser.get("/hub/home")[1]


def metrics(cluster) -> str:
    status, text = cluster.request("GET", "/hub/metrics")
    assert status == 200
    return text


def test_idle_sessions_stop_and_sessions_in_use_do_not(cluster):
    for user in ("erin", "frank", "grace"):
        cluster.start(user, DEBUG)
    # frank works in a terminal that prints, grace's GPU computes (the stand-in driver's reading), each from the
    # moment the session is ready: a 30-s timeout leaves no time to wait for the others first
    cluster.wait_ready("frank")
    terminal = PrintingTerminal(cluster, "frank")
    cluster.wait_ready("grace")
    node, (index,) = job_gpus(cluster.job_of("grace"))
    reading = NVML_READINGS / f"{node}-{index}"
    reading.write_text("57 2048 1")
    try:
        cluster.wait_ready("erin")
        jobs = {user: cluster.job_of(user) for user in ("erin", "frank", "grace")}
        started = time.monotonic()
        timeout = 30  # deploy/portal.dev.yaml's sessions.idle_timeout_by_partition.debug
        # erin also has a session of the 2-hour timeout: the 30-s culler sees it (erin is in both cullers'
        # groups) and must leave it to its own
        log_from = HUB_LOG.stat().st_size
        status, body = cluster.request("POST", "/hub/api/users/erin/servers/long", LONG)
        assert status in (201, 202), body
        cluster.wait(lambda: (cluster.server("erin", "long") or {}).get("ready"), 120, "erin's 2-hour session ready")

        def graces_gpus():
            status, gpus = cluster.request("GET", "/user/grace/dsportal/session/gpus")
            assert status == 200, gpus
            return [(g["index"], g["utilization"], g["processes"]) for g in gpus["gpus"]]

        # a reading is reused for 5 s: the new one shows within that; the session numbers its one GPU 0, as CUDA
        # and NVML in a job of a ConstrainDevices node do, whichever device Slurm gave it
        cluster.wait(lambda: graces_gpus() == [(0, 57, 1)], 20, "grace's GPU reading the stand-in's values")
        assert re.search(r'dsportal_sessions\{partition="debug",state="running"\} 3\.0', metrics(cluster))
        assert re.search(r'dsportal_gpus_allocated\{partition="debug"\} 3\.0', metrics(cluster))

        # erin does nothing: her session stops, and its GPU goes back to Slurm
        cluster.wait(lambda: cluster.server("erin") is None, 180, "erin's idle session stopped")
        cluster.wait(lambda: jobs["erin"] not in cluster.jobs("erin"), 60, "erin's job leaving the queue")
        assert re.search(
            r"Your session was stopped at [0-9]{2}:[0-9]{2} because nothing used it for [0-9]+ s "
            r"\(no busy kernel, terminal, mouse or keys in JupyterLab, or GPU work\): its GPUs went back "
            r"to the cluster\.",
            home_page("erin"),
        )
        assert re.search(r'dsportal_sessions_culled_total\{partition="debug"\} [1-9]', metrics(cluster))

        # frank's and grace's sessions outlive twice the timeout: watched throughout, not only at the end
        def both_kept_until_then():
            assert cluster.server("frank") and cluster.server("grace"), (
                cluster.server("frank"),
                cluster.server("grace"),
            )
            return time.monotonic() - started >= 2 * timeout + 10

        cluster.wait(both_kept_until_then, 2 * timeout + 30, "twice the idle timeout passing with frank and grace kept")
        assert terminal.lines >= 10
        assert jobs["frank"] in cluster.jobs("frank") and jobs["grace"] in cluster.jobs("grace")
        assert re.search(r'dsportal_slurm_command_seconds_count\{command="squeue"\} [1-9]', metrics(cluster))

        # erin's 2-hour session sat idle past 30 s through many of the short culler's passes: untouched, and
        # never asked for (before, the short culler asked to stop it at each pass: a 403 and a traceback each time)
        assert (cluster.server("erin", "long") or {}).get("ready")
        log = HUB_LOG.read_bytes()[log_from:].decode(errors="replace")
        assert not re.search(r"\b\d{3} DELETE /hub/api/users/erin/servers/long\b", log), log[-3000:]
        assert "Error processing erin" not in log, log[-3000:]
    finally:
        terminal.stop.set()
        reading.unlink(missing_ok=True)
        cluster.stop_named("erin", "long")

"""A restarted proxy routes the running sessions again by itself, on the real dev cluster.

configurable-http-proxy keeps its routes in memory: restarted (a crash that systemd's Restart=on-failure
answers, an admin's `systemctl restart dsportal-proxy`), it holds none.  JupyterHub adds them back only from its
activity loop, which the portal turns off, so every session stayed unreachable until the hub restarted.  The
hub's "proxy routes" loop (spawner/hub/apps/proxy.py `keep_routed`) notices its mark in the proxy gone and adds
every route back.
"""

from __future__ import annotations

import re
import time

import pytest

from deploy.dev import supervisor
from tests.support import hublog

LOST = "The proxy has lost its routes (it restarted): adding every route back"


def answers(cluster, user: str) -> bool:
    """Whether the user's session answers through the proxy (not the hub's page for a session it cannot reach)."""
    try:
        status, body = cluster.request("GET", f"/user/{user}/api/status", timeout=10)
    except OSError:  # the proxy not listening yet
        return False
    return status == 200 and isinstance(body, dict) and "started" in body


@pytest.mark.alone  # restarts the proxy every session and page goes through
def test_a_restarted_proxy_routes_the_running_sessions_again_without_the_hub(cluster):
    cluster.start("alice", {"partition": "sxm2", "gpus": 0, "hours": 1})
    cluster.wait_ready("alice")
    assert answers(cluster, "alice")
    hub_pid = supervisor.states()["jupyterhub"][1]
    mark = hublog.mark()

    supervisor.stop("proxy")
    supervisor.start("proxy")
    restarted = time.monotonic()
    cluster.wait(lambda: answers(cluster, "alice"), 30, "alice's session routed again after the proxy's restart")
    print(f"alice's session answered again {time.monotonic() - restarted:.1f} s after the proxy restarted")
    assert supervisor.states()["jupyterhub"][1] == hub_pid  # without the hub's restart

    # one small look every 5 s at the portal's mark: once it is back, no pass finds it gone again (a look that
    # always missed it would re-add every route at each pass)
    time.sleep(12)
    log = hublog.since(mark)
    assert len(re.findall(re.escape(LOST), log)) == 1, hublog.notable(log)
    assert cluster.request("GET", "/hub/api/")[0] == 200

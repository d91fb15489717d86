"""One user cannot stall the hub or swell it for good through the run dialog's reads (the attack of issue 55).

dave writes a ~19 MiB notebook in his home (within runs.max_notebook_mib) and asks the run dialog's endpoint
for it 30 times at once (within his read quota), while another client times `GET /hub/api/`.  Parsed in the
hub, each read held the interpreter's lock ~0.6 s: the other client waited up to 3.26 s and the hub's memory
went 148 -> 1,375 MiB and stayed at ~830.  Now the parse runs in a process of its own, a few at once.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.cluster import HUB, Cluster
from tests.support.http import wait_until
from tests.support.jobs import JobsClient

pytestmark = [
    pytest.mark.integration,
    pytest.mark.alone,
]  # the dev cluster to itself (tests/support/lanes.py): floods the hub and bounds another client's wait

HUB_API_PORT = 8081
OTHERS_MAX_WAIT = 1.0  # s: the bound on another user's request while the attack runs (3.26 s before)
MEMORY_SLACK = 200 * 1024 * 1024  # bytes the hub may keep after the attack (~700 MiB before)
READS = 30


WATCHER = """
import http.client, ssl, sys, time, urllib.parse
url, token = urllib.parse.urlsplit(sys.argv[1]), sys.argv[2]
# one TLS context and one kept connection: each line is the hub's answer time, not a handshake's or a CA file's
connection = http.client.HTTPSConnection(url.hostname, url.port, context=ssl.create_default_context(), timeout=60)
while True:
    started = time.monotonic()
    connection.request("GET", url.path, headers={"Authorization": "token " + token})
    connection.getresponse().read()
    print(time.monotonic() - started, flush=True)
    time.sleep(0.05)
"""


def hub_rss() -> int:
    """The hub process's resident memory (bytes): the process listening on the hub's API port."""
    out = subprocess.run(
        ["ss", "-Hltnp", f"sport = :{HUB_API_PORT}"], capture_output=True, text=True, timeout=10, check=True
    ).stdout
    pid = re.search(r"pid=([0-9]+)", out).group(1)
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


def big_notebook(mib: float) -> str:
    """An nbformat 4 notebook of about `mib` MiB: a parameters cell, then cells with long stored outputs."""
    output = {"output_type": "stream", "name": "stdout", "text": ["loss 0.123456789 accuracy 0.987654321\n"] * 40}
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [output], "source": "train()\n"}
    one = len(json.dumps(cell)) + 2
    params = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "outputs": [], "source": "lr = 0.01\n"}
    cells = [params] + [{**cell, "id": f"c{i}"} for i in range(int(mib * 1024 * 1024 / one))]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def timed_get(client: Cluster) -> float:
    started = time.monotonic()
    status, _ = client.request("GET", "/hub/api/", timeout=60)
    assert status == 200
    return time.monotonic() - started


def test_thirty_reads_of_a_big_notebook_neither_stall_the_hub_nor_swell_it(cluster_api):
    dave = JobsClient.for_user("dave")
    notebook = big_notebook(19)
    dave.write("runs/huge.ipynb", notebook)
    other = dave.admin
    before = [timed_get(other) for _ in range(20)]
    rss_before = hub_rss()
    # the other user's requests from a process of their own: what the hub makes them wait, not this one's threads
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCHER, f"{HUB}/hub/api/", other.token], stdout=subprocess.PIPE, text=True
    )
    first = float(watcher.stdout.readline())  # connected: the attack starts now
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(READS) as pool:
            answers = list(pool.map(lambda _: dave.request("GET", "runs/form?path=runs/huge.ipynb"), range(READS)))
    finally:
        watcher.terminate()
    during = [float(line) for line in watcher.communicate(timeout=60)[0].split()]
    before.append(first)
    took = time.monotonic() - started
    rss_peak = hub_rss()
    # the hub's memory settles: what a request made it hold is given back within a deadline
    wait_until(lambda: hub_rss() - rss_before < MEMORY_SLACK, 60, "the hub's memory back near where it was")
    rss_after = hub_rss()
    print(
        f"\n{len(notebook) / 2**20:.1f} MiB notebook, {READS} reads at once in {took:.2f} s; GET /hub/api/: "
        f"median {statistics.median(before) * 1000:.0f} ms before, during median "
        f"{statistics.median(during) * 1000:.0f} ms, max {max(during) * 1000:.0f} ms ({len(during)} requests); "
        f"hub RSS {rss_before / 2**20:.0f} -> peak {rss_peak / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB; "
        f"each: {' '.join(f'{t * 1000:.0f}' for t in during)} ms"
    )
    statuses = sorted({status for status, _ in answers})
    parsed = [body for status, body in answers if status == 200]
    assert parsed and all(p["parameters"][0]["name"] == "lr" for p in parsed), statuses
    # the reads past the hub's share for one user are refused with words, never an error of the hub
    assert set(statuses) <= {200, 429, 503}, statuses
    assert all(body.get("message") for status, body in answers if status != 200)
    assert max(during) < OTHERS_MAX_WAIT, f"another user's request waited {max(during):.2f} s"

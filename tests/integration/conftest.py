"""Fixtures for tests against the real dev cluster (deploy/devcluster up).

cluster    a Cluster: the hub's REST API through the proxy on port 8000, with the admin token,
           plus Slurm's own view (squeue, scontrol); sessions are stopped after each test
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.httpapi import json_request, wait_until

HUB = "http://127.0.0.1:8000"
TOKEN_FILE = Path("/etc/dsportal/admin.token")
USERS = ("alice", "bob", "carol")
ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


class Cluster:
    def __init__(self, token: str):
        self.token = token

    def request(self, method: str, path: str, body=None, timeout: float = 30):
        return json_request(method, f"{HUB}{path}", body, token=self.token, timeout=timeout)

    def ensure_user(self, name: str) -> None:
        status, _ = self.request("GET", f"/hub/api/users/{name}")
        if status == 404:
            assert self.request("POST", f"/hub/api/users/{name}")[0] == 201

    def server(self, name: str) -> dict | None:
        return self.request("GET", f"/hub/api/users/{name}")[1]["servers"].get("")

    def start(self, name: str, options: dict) -> int:
        self.ensure_user(name)
        return self.request("POST", f"/hub/api/users/{name}/server", options)[0]

    def wait(self, predicate, timeout: float = 90, what: str = "condition"):
        return wait_until(predicate, timeout, what, every=0.3)

    def wait_ready(self, name: str, timeout: float = 120) -> dict:
        return self.wait(lambda: (self.server(name) or {}).get("ready") and self.server(name), timeout, f"{name} ready")

    def stop(self, name: str) -> None:
        status, _ = self.request("DELETE", f"/hub/api/users/{name}/server")
        assert status in (202, 204, 400, 404), status
        self.wait(lambda: not self.server(name), 60, f"{name} stopped")

    def jobs(self, user: str | None = None) -> dict[str, dict]:
        """Slurm's own view: job id -> {state, node, reason} (pending and running jobs)."""
        argv = ["squeue", "-h", "-o", "%i|%T|%N|%r|%u"] + (["-u", user] if user else [])
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
        jobs = {}
        for line in out.splitlines():
            job_id, state, node, reason, owner = line.split("|")
            jobs[job_id] = {"state": state, "node": node, "reason": reason, "user": owner}
        return jobs

    def job_of(self, user: str) -> str:
        return self.wait(lambda: next(iter(self.jobs(user)), None), 30, f"a job of {user}")

    @staticmethod
    def scontrol(job_id: str) -> str:
        return subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True,
                              timeout=30, check=True).stdout

    def progress(self, name: str, until: str, timeout: float = 60) -> list[str]:
        """Messages of the progress event stream, up to one containing `until`."""
        req = urllib.request.Request(f"{HUB}/hub/api/users/{name}/server/progress",
                                     headers={"Authorization": f"token {self.token}"})
        messages = []
        deadline = time.monotonic() + timeout
        with urllib.request.urlopen(req, timeout=timeout) as stream:
            for raw in stream:
                line = raw.decode().strip()
                if line.startswith("data:"):
                    messages.append(json.loads(line[5:]).get("message", ""))
                    if until in messages[-1]:
                        return messages
                assert time.monotonic() < deadline, messages
        raise AssertionError(f"progress ended without {until!r}: {messages}")

    def clean(self) -> None:
        for name in USERS:
            if self.request("GET", f"/hub/api/users/{name}")[0] == 200 and self.server(name):
                self.stop(name)
        subprocess.run(["scancel", "--name", ",".join(f"dsportal-{u}" for u in USERS)], timeout=30)
        self.wait(lambda: not self.jobs(), 60, "an empty queue")


@pytest.fixture(scope="session")
def cluster_api() -> Cluster:
    assert TOKEN_FILE.exists(), "the dev cluster is not set up: run `deploy/devcluster up` (as root) first"
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    try:
        status, _ = cluster.request("GET", "/hub/api/")
    except OSError as e:
        pytest.fail(f"the portal does not answer on {HUB} ({e}); run `deploy/devcluster up` first")
    assert status == 200
    return cluster


@pytest.fixture
def cluster(cluster_api) -> Cluster:
    cluster_api.clean()
    yield cluster_api
    cluster_api.clean()

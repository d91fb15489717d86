"""The real dev cluster as the tests see it: the hub's REST API on port 8000 and Slurm's own view."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import lanes
from tests.support.http import json_request, wait_until

# HTTPS with the dev cluster's CA (in this machine's trust store), one origin per user
HUB = "https://localhost:8000"


def url_for(path: str) -> str:
    """A path's full URL: /user/NAME/... lives on NAME's own host (subdomains), the rest on the hub's."""
    parts = path.split("/")
    if len(parts) > 2 and parts[1] == "user" and parts[2]:
        return f"https://{parts[2]}.localhost:8000{path}"
    return f"{HUB}{path}"


TOKEN_FILE = Path("/etc/dsportal/admin.token")
SUPERVISORCTL = ["/usr/bin/supervisorctl", "-c", "/var/lib/dsportal-dev/supervisord.conf"]
NVML_READINGS = Path("/var/lib/dsportal-nvml")  # the stand-in NVML's readings (deploy/dev/fakenvml.c): NODE-INDEX


def supervisorctl(*args: str) -> str:
    """The dev cluster's supervisord: stop and start its daemons as an outage test does."""
    return subprocess.run([*SUPERVISORCTL, *args], capture_output=True, text=True, timeout=120).stdout


def job_gpus(job_id: str) -> tuple[str, list[str]]:
    """(node, device numbers) of a job's GPUs as Slurm gave them (`scontrol -d`'s GRES IDX: the N of node-nvidiaN).

    The stand-in NVML reads /var/lib/dsportal-nvml/NODE-N for a GPU; inside the job CUDA numbers its GPUs from 0
    (ConstrainDevices), so CUDA_VISIBLE_DEVICES does not name them.
    """
    out = subprocess.run(["scontrol", "-d", "show", "job", job_id], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"\bNodes=(\S+) .*?GRES=\S*?\(IDX:([0-9,-]+)\)", out)
    assert match, out
    numbers: list[str] = []
    for part in match.group(2).split(","):
        first, _, last = part.partition("-")
        numbers += [str(n) for n in range(int(first), int(last or first) + 1)]
    return match.group(1), numbers


ROOT = Path(__file__).resolve().parents[2]


class Cluster:
    """The hub's API with the admin token; sessions and jobs of the demo users."""

    def __init__(self, token: str):
        self.token = token

    def request(self, method: str, path: str, body=None, timeout: float = 30):
        return json_request(method, url_for(path), body, token=self.token, timeout=timeout)

    def ensure_user(self, name: str) -> None:
        lanes.check_person(name, lanes.lane())
        status, _ = self.request("GET", f"/hub/api/users/{name}")
        if status == 404:
            assert self.request("POST", f"/hub/api/users/{name}")[0] == 201

    def user_token(self, name: str, note: str = "tests") -> str:
        """A new API token of the user's own (an hour), made with the admin's."""
        self.ensure_user(name)
        status, body = self.request("POST", f"/hub/api/users/{name}/tokens", {"note": note, "expires_in": 3600})
        assert status == 201, body
        return body["token"]

    def as_user(self, name: str, note: str = "tests") -> Cluster:
        """The hub's API as `name` (a token of the user's own, made with the admin's)."""
        return Cluster(self.user_token(name, note))

    def partition(self, name: str) -> dict:
        """What the hub says is free in partition `name` (GET /hub/api/dsportal/partitions), as its caller sees it."""
        partitions = self.request("GET", "/hub/api/dsportal/partitions")[1]["partitions"]
        return next(p for p in partitions if p["partition"] == name)

    def server(self, name: str, server: str = "") -> dict | None:
        return self.request("GET", f"/hub/api/users/{name}")[1]["servers"].get(server)

    def named_sessions(self, name: str) -> list[str]:
        """The user's named sessions, running or kept."""
        user = self.request("GET", f"/hub/api/users/{name}?include_stopped_servers=1")[1]
        return sorted(n for n in user.get("servers", {}) if n)

    def stop_named(self, name: str, server: str) -> None:
        """Stop the named session and remove it (JupyterHub's DELETE with remove)."""
        status, _ = self.request("DELETE", f"/hub/api/users/{name}/servers/{server}", {"remove": True})
        assert status in (202, 204, 404), status
        self.wait(lambda: server not in self.named_sessions(name), 60, f"{name}'s {server} removed")

    def start(self, name: str, options: dict) -> int:
        self.ensure_user(name)
        return self.request("POST", f"/hub/api/users/{name}/server", options)[0]

    def refused_start(self, name: str, options: dict) -> str:
        """The words of a start that is refused: the 400's, or (refused after JupyterHub's first second) the
        failure its progress shows."""
        status, body = self.request("POST", f"/hub/api/users/{name}/server", options)
        if status == 400:
            return body["message"]
        assert status == 202, (status, body)
        # a start that fails while its progress is first asked for: JupyterHub answers 400 "not starting" between
        # the failure and the end of the failed start's own stop (tens of ms), then the failure's event
        for _ in range(10):
            try:
                return "\n".join(self.progress(name, until="failed"))
            except urllib.error.HTTPError as e:
                if e.code != 400:
                    raise
                time.sleep(0.5)
        return "\n".join(self.progress(name, until="failed"))

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
    def restart_hub() -> None:
        """Restart the hub the way an admin does (deploy/dev's restart-hub); sessions keep running."""
        subprocess.run(["/usr/bin/python3", "-m", "deploy.dev", "restart-hub"], check=True, timeout=180, cwd=ROOT)

    @staticmethod
    def scontrol(job_id: str) -> str:
        return subprocess.run(
            ["scontrol", "show", "job", job_id], capture_output=True, text=True, timeout=30, check=True
        ).stdout

    def progress(self, name: str, until: str, timeout: float = 60, opened: threading.Event | None = None) -> list[str]:
        """Messages of the progress event stream, up to one containing `until`; `opened` is set once the hub has
        answered the stream's request (a start that ends before that has no stream to follow: 400 not starting)."""
        req = urllib.request.Request(
            f"{HUB}/hub/api/users/{name}/server/progress", headers={"Authorization": f"token {self.token}"}
        )
        messages = []
        deadline = time.monotonic() + timeout
        with urllib.request.urlopen(req, timeout=timeout) as stream:
            if opened is not None:
                opened.set()
            for raw in stream:
                line = raw.decode().strip()
                if line.startswith("data:"):
                    messages.append(json.loads(line[5:]).get("message", ""))
                    if until in messages[-1]:
                        return messages
                assert time.monotonic() < deadline, messages
        raise AssertionError(f"progress ended without {until!r}: {messages}")

    def clean(self) -> None:
        """Every session and job of this lane's people stopped and gone (tests/support/lanes.py): the other lane's,
        running beside it, are not this process's to stop."""
        people = lanes.people(lanes.lane())
        # one request for every user the hub knows (a request per demo user cost half a second, twice a test)
        status, users = self.request("GET", "/hub/api/users?include_stopped_servers=1&limit=200")
        assert status == 200 and isinstance(users, list) and len(users) < 200, (status, users)
        for user in users:
            name, servers = user["name"], user.get("servers") or {}
            if name not in people:
                continue
            for server in sorted(n for n in servers if n):
                self.stop_named(name, server)
            if "" in servers and not servers[""].get("stopped"):
                self.stop(name)
        # their sessions and their other jobs: notebooks and scripts run as jobs (tests/integration/test_runs.py)
        for name in people:  # scancel takes one user
            subprocess.run(["scancel", f"--user={name}"], timeout=30)
        if lanes.lane() == "alone":  # nothing beside it: every portal job goes, and the queue is empty
            subprocess.run(["scancel", "--name=dsportal"], timeout=30)
            self.wait(lambda: not self.jobs(), 60, "an empty queue")
        self.wait(lambda: not self.jobs_of(people), 60, f"no job of {', '.join(people)} in the queue")

    def jobs_of(self, people: tuple[str, ...]) -> dict[str, dict]:
        """Slurm's pending and running jobs of these people (job id -> as jobs() says)."""
        return {job_id: job for job_id, job in self.jobs().items() if job["user"] in people}


@contextmanager
def one_session(user: str, options: dict) -> Iterator[Cluster]:
    """The dev cluster with `user`'s session started and ready (for a benchmark); stopped afterwards."""
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    cluster.clean()
    cluster.start(user, options)
    cluster.wait_ready(user)
    try:
        yield cluster
    finally:
        cluster.stop(user)

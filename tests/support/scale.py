"""The scale rig: the real hub, proxy and spawner, PostgreSQL (or SQLite), the mock Slurm, stand-in JupyterLabs.

Used by the benchmark (tests/perf/bench_scale.py: 500 sessions, 5,000
users) and by its smoke test (tests/component/test_scale_smoke.py: a few
sessions, every path once).  Everything runs under `root`; `stop()` ends
every process it started.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.support.http import json_request, wait_until
from tests.support.hub import ADMIN_TOKEN, ROOT, HubProcess
from tests.support.mockslurm import MockSlurm, config_data
from tests.support.postgres import Postgres

HELD_PARTITION = "pcie"  # the stand-ins leave its jobs pending: the queued sessions

# What a hub on a real cluster runs with: no debug log, every user may log in (the rig's users are made by API).
HUB_SETTINGS = """
c.JupyterHub.log_level = "INFO"
c.Authenticator.allow_all = True
c.JupyterHub.concurrent_spawn_limit = 0
c.JupyterHub.load_roles.append({"name": "scale-rig", "scopes": ["read:metrics", "proxy"], "services": ["tests"]})
"""


def user_names(n: int) -> list[str]:
    return [f"u{i:05d}" for i in range(n)]


def server_path(name: str) -> str:
    """The API path of session `name`: "USER" (the unnamed one) or "USER/SERVER" (a named one)."""
    user, _, server = name.partition("/")
    return f"/users/{user}/servers/{server}" if server else f"/users/{user}/server"


def sessions_of(users: list[str], per_user: int) -> list[str]:
    """`per_user` sessions for each of `users`: the unnamed one, then "USER/s2", "USER/s3", ..."""
    return [name if i == 1 else f"{name}/s{i}" for name in users for i in range(1, per_user + 1)]


class ScaleRig:
    def __init__(self, root: Path, db: str = "postgresql", poll_interval: float = 30.0):
        self.root = root
        self.db = db
        self.mock = MockSlurm(root / "mockslurm")
        self.postgres = Postgres() if db == "postgresql" else None
        portal = config_data(self.mock)
        portal["slurm"]["command_timeout"] = 30  # a loaded 2-core machine: the mock's Python start-up is slow
        self.poll_interval = poll_interval
        self.portal = portal
        self.hub: HubProcess | None = None
        self.fleet: subprocess.Popen | None = None

    # --- starting and stopping ------------------------------------------------------
    def start(self) -> None:
        """Start everything; a part that fails to start takes down what had started (nothing is left)."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        if self.postgres:
            self.postgres.start()
            self.portal["hub"] = {**self.portal.get("hub", {}), "db_url": self.postgres.url}
        self.hub = HubProcess(
            self.root / "hub", self.portal, after=HUB_SETTINGS + f"c.Spawner.poll_interval = {self.poll_interval}\n"
        )
        self.hub.start(timeout=120)
        self.fleet = subprocess.Popen(
            [sys.executable, "-m", "tests.support.standin", str(self.mock.state), "--hold", HELD_PARTITION],
            cwd=ROOT,
            stdout=open(self.root / "standin.log", "ab"),
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        for proc in (self.fleet,):
            if proc and proc.poll() is None:
                proc.terminate()
                proc.wait(20)
        if self.hub and self.hub.proc:
            self.hub.stop()
        if self.postgres:
            self.postgres.stop()

    def restart_hub(self) -> float:
        """Stop the hub (its sessions keep running) and start it again; seconds until its API answers."""
        self.hub.stop()
        started = time.monotonic()
        self.hub.start(timeout=300)
        return time.monotonic() - started

    # --- the hub's API ------------------------------------------------------------------
    def api(self, method: str, path: str, body=None, token: str = ADMIN_TOKEN, timeout: float = 120):
        return json_request(method, f"{self.hub.url}/hub/api{path}", body, token=token, timeout=timeout)

    def create_users(self, names: list[str]) -> None:
        for i in range(0, len(names), 500):
            status, answer = self.api("POST", "/users", {"usernames": names[i : i + 500]})
            if status not in (201, 409):
                raise RuntimeError(f"creating users failed: {status} {answer}")

    def start_sessions(self, names: list[str], options: dict, parallel: int = 50) -> list[str]:
        """Ask for every session at once (up to `parallel` requests in flight); the names refused."""

        def ask(name: str) -> str | None:
            status, answer = self.api("POST", server_path(name), options)
            return None if status in (201, 202) else f"{name}: {status} {answer}"

        with ThreadPoolExecutor(parallel) as pool:
            return [why for why in pool.map(ask, names) if why]

    def stop_sessions(self, names: list[str], parallel: int = 20) -> list[str]:
        def stop(name: str) -> str | None:
            status, answer = self.api("DELETE", server_path(name))
            return None if status in (202, 204) else f"{name}: {status} {answer}"

        with ThreadPoolExecutor(parallel) as pool:
            return [why for why in pool.map(stop, names) if why]

    def servers(self, state: str) -> set[str]:
        """Sessions in `state` (ready or active), through the paginated API: "NAME" for a user's unnamed
        session, "NAME/SERVER" for a named one."""
        found: set[str] = set()
        offset = 0
        while True:
            status, page = self.api("GET", f"/users?state={state}&offset={offset}&limit=200")
            if status != 200:
                raise RuntimeError(f"listing users failed: {status} {page}")
            found |= {
                u["name"] + (f"/{server}" if server else "")
                for u in page
                for server, model in (u.get("servers") or {}).items()
                if model.get("ready") or state != "ready"
            }
            if len(page) < 200:
                return found
            offset += 200

    def wait_for(self, predicate, timeout: float, what: str, every: float = 0.5):
        """wait_until with the rig's pace (each check asks the hub); an AssertionError at the deadline."""
        return wait_until(predicate, timeout, what, every)

    # --- what the hub costs -----------------------------------------------------------
    def hub_usage(self) -> tuple[int, float]:
        """(RSS bytes, CPU seconds) of the hub's own process."""
        pid = self.hub.proc.pid
        rss = next(int(line.split()[1]) * 1024 for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS:"))
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        ticks = int(subprocess.run(["getconf", "CLK_TCK"], capture_output=True, text=True, timeout=10).stdout)
        return rss, (int(fields[11]) + int(fields[12])) / ticks

    def slurm_commands(self) -> dict[str, float]:
        """Slurm commands the hub ran since it started, by command (its own metrics)."""
        status, text = json_request("GET", f"{self.hub.url}/hub/metrics", token=ADMIN_TOKEN)
        return {
            m[0]: float(m[1])
            for m in re.findall(r'dsportal_slurm_command_seconds_count\{command="([a-z-]+)"\} ([0-9.e+]+)', str(text))
        }

    def queue(self) -> dict[str, int]:
        """The mock queue's jobs by state."""
        counts: dict[str, int] = {}
        for job in self.mock.jobs().values():
            counts[job["state"]] = counts.get(job["state"], 0) + 1
        return counts

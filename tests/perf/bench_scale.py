"""Benchmark: one hub for a whole cluster (tests/support/scale.py), printing numbers for each scenario.

  1. `--sessions` sessions (500) started in waves of `--wave` (50) at once: time per wave, failures.
  2. `--users` users (5,000) in the hub's database, the sessions running and `--pending` (50) queued:
     hub RSS and CPU over `--watch` seconds (300), Slurm commands per minute, and p50 / p99 of
     GET /hub/api/users/NAME, the home page and the spawn page with 20 clients in parallel.
  3. A hub restart with the sessions running: seconds until every one is ready again, sessions lost.
  4. Logins (`--logins`): 200 accounts in a real slapd, 20 logins per second for 30 s, one attempt in
     ten with a wrong password first: p50 / p99, errors, correct passwords refused.
  5. Stopping every session: seconds until none is left in the hub and in the mock queue.

The real hub, proxy and spawner with its shared job watcher run against the
mock Slurm; one stand-in process plays every session's JupyterLab
(tests/support/standin.py).  `--db postgresql` (Debian's, started here),
`sqlite` or `both`.  Asserts nothing about speed.  Run as root from the
repository's root:

    /opt/dsportal/venv/bin/python -m tests.perf.bench_scale [--sessions 500] [--db both] [--logins]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from tests.perf.stats import ms, percentile
from tests.support.http import json_request
from tests.support.hub import ADMIN_TOKEN, FormBrowser
from tests.support.scale import HELD_PARTITION, ScaleRig, user_names

OPTIONS = {"gpus": 1, "hours": 8}


def start_waves(rig: ScaleRig, names: list[str], wave: int) -> tuple[list[float], list[str]]:
    times, failures = [], []
    for i in range(0, len(names), wave):
        batch = names[i : i + wave]
        began = time.monotonic()
        failures += rig.start_sessions(batch, OPTIONS, parallel=wave)
        try:
            rig.wait_for(
                lambda batch=batch: set(batch) <= rig.servers("ready"), 600, f"wave {i // wave + 1} ready", every=0.25
            )
        except AssertionError as e:
            failures.append(str(e))
        times.append(time.monotonic() - began)
        print(f"  wave {i // wave + 1}: {len(batch)} sessions ready in {times[-1]:.1f} s", flush=True)
    return times, failures


class Load:
    """20 clients in parallel asking what users and scripts ask, each timed."""

    def __init__(self, rig: ScaleRig, running: list[str], idle: list[str], clients: int = 20):
        self.rig = rig
        self.running = running
        self.idle = idle
        self.clients = clients
        self.browsers = {}  # pages need a login cookie (a token is for the API): one logged-in browser per client
        for name in idle[:clients]:
            browser = FormBrowser(rig.hub.url)
            status, _, _ = browser.login(name, "any")  # the rig's hub lets every user in (dummy authenticator)
            if status != 302:
                raise RuntimeError(f"{name} could not log in: {status}")
            self.browsers[name] = browser
        self.latency: dict[str, list[float]] = {
            "GET /hub/api/users/NAME": [],
            "home page": [],
            "spawn page": [],
            "home page's refresh (GET /hub/api/dsportal/session)": [],
        }
        self.errors: dict[str, int] = dict.fromkeys(self.latency, 0)
        self.stop = threading.Event()

    def client(self, number: int) -> None:
        name = list(self.browsers)[number % len(self.browsers)]
        browser = self.browsers[name]
        base = self.rig.hub.url
        asks = [
            (
                "GET /hub/api/users/NAME",
                lambda: json_request("GET", f"{base}/hub/api/users/{random.choice(self.running)}", token=ADMIN_TOKEN),
            ),
            ("home page", lambda: browser.get("/hub/home")),
            ("spawn page", lambda: browser.get(f"/hub/spawn/{name}")),
            # what an open home page asks every 10 s (templates/home.html)
            ("home page's refresh (GET /hub/api/dsportal/session)", lambda: browser.get("/hub/api/dsportal/session")),
        ]
        while not self.stop.is_set():
            for kind, ask in asks:
                began = time.monotonic()
                status = ask()[0]
                self.latency[kind].append(time.monotonic() - began)
                if status != 200:
                    self.errors[kind] += 1

    def run(self, seconds: float) -> tuple[list[int], float]:
        """Run the clients for `seconds`; (RSS samples, average CPU in cores) of the hub meanwhile."""
        rss, (_, cpu0), t0 = [], self.rig.hub_usage(), time.monotonic()
        threads = [threading.Thread(target=self.client, args=(n,), daemon=True) for n in range(self.clients)]
        for t in threads:
            t.start()
        while time.monotonic() - t0 < seconds:
            rss.append(self.rig.hub_usage()[0])
            time.sleep(5)
        self.stop.set()
        for t in threads:
            t.join(60)
        return rss, (self.rig.hub_usage()[1] - cpu0) / (time.monotonic() - t0)


def run(db: str, args: argparse.Namespace) -> dict[str, str]:
    results: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="dsportal-scale-") as folder:
        rig = ScaleRig(Path(folder), db=db, poll_interval=args.poll_interval)
        rig.start()
        try:
            print(f"[{db}] hub up; creating {args.users} users", flush=True)
            names = user_names(args.users)
            began = time.monotonic()
            rig.create_users(names)
            results["create users"] = f"{time.monotonic() - began:.1f} s"
            running, queued, idle = (
                names[: args.sessions],
                names[args.sessions : args.sessions + args.pending],
                names[args.sessions + args.pending :],
            )

            print(f"[{db}] scenario 1: {args.sessions} sessions in waves of {args.wave}", flush=True)
            waves, failures = start_waves(rig, running, args.wave)
            results["1 wave time p50 / p95"] = f"{percentile(waves, 50):.1f} s / {percentile(waves, 95):.1f} s"
            results["1 start failures"] = str(len(failures))
            for why in failures[:5]:
                print(f"  failure: {why}")

            print(f"[{db}] scenario 2: {args.pending} queued, {args.watch:.0f} s of load", flush=True)
            refused = rig.start_sessions(queued, {**OPTIONS, "partition": HELD_PARTITION})
            rig.wait_for(lambda: rig.queue().get("PENDING", 0) >= len(queued) - len(refused), 120, "queued jobs")
            load = Load(rig, running, idle)
            slurm0, t0 = rig.slurm_commands(), time.monotonic()
            rss, cores = load.run(args.watch)
            minutes = (time.monotonic() - t0) / 60
            slurm1 = rig.slurm_commands()
            results["2 hub RSS max / mean"] = f"{max(rss) / 2**20:.0f} MB / {statistics.mean(rss) / 2**20:.0f} MB"
            results["2 hub CPU (cores, mean)"] = f"{cores:.2f}"
            for command in ("squeue", "sbatch", "scancel", "sinfo"):
                per_minute = (slurm1.get(command, 0) - slurm0.get(command, 0)) / minutes
                results[f"2 {command} per minute"] = f"{per_minute:.1f}"
            for kind, values in load.latency.items():
                results[f"2 {kind} p50 / p99"] = (
                    f"{ms(values, 50)} / {ms(values, 99)} ({len(values)} requests, {load.errors[kind]} errors)"
                )

            print(f"[{db}] scenario 3: hub restart", flush=True)
            answering = rig.restart_hub()
            began = time.monotonic()
            try:
                rig.wait_for(lambda: set(running) <= rig.servers("ready"), 300, "every session ready again")
            except AssertionError:
                pass
            ready = rig.servers("ready")
            results["3 restart: API answers"] = f"{answering:.1f} s"
            results["3 restart: all reattached"] = f"{answering + time.monotonic() - began:.1f} s"
            results["3 sessions lost"] = str(len(set(running) - ready))

            print(f"[{db}] scenario 5: stopping every session", flush=True)
            began = time.monotonic()
            failures = rig.stop_sessions(running + queued)
            rig.wait_for(lambda: not rig.servers("active"), 600, "no session left in the hub")
            rig.wait_for(lambda: set(rig.queue()) <= {"CANCELLED"}, 300, "nothing left in the queue")
            results["5 stop all"] = f"{time.monotonic() - began:.1f} s ({len(failures)} failures)"
            results["5 left in the queue"] = str(sum(n for s, n in rig.queue().items() if s != "CANCELLED"))
        finally:
            rig.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--users", type=int, default=5000)
    parser.add_argument("--pending", type=int, default=50)
    parser.add_argument("--wave", type=int, default=50)
    parser.add_argument("--watch", type=float, default=300)
    parser.add_argument("--poll-interval", type=float, default=30, help="c.Spawner.poll_interval (JupyterHub's 30)")
    parser.add_argument("--db", choices=("postgresql", "sqlite", "both"), default="postgresql")
    parser.add_argument("--logins", action="store_true", help="also scenario 4 (a real slapd, 200 accounts)")
    args = parser.parse_args()
    started = time.monotonic()
    table = {db: run(db, args) for db in (("postgresql", "sqlite") if args.db == "both" else (args.db,))}
    if args.logins:
        from tests.perf.bench_logins import run_logins

        table["logins"] = run_logins()
    for db, results in table.items():
        print(f"\n== {db}")
        for key, value in results.items():
            print(f"  {key:<44} {value}")
    print(f"\nrig run time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()

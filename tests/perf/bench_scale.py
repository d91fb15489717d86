"""Benchmark: one hub for a whole cluster (tests/support/scale.py), printing numbers for each scenario.

  1. `--sessions` sessions (500) started in waves of `--wave` (50) at once: time per wave, failures;
     `--per-user 3`: three sessions each (the unnamed one and two named ones) for a third as many users.
  2. `--users` users (5,000) in the hub's database, the sessions running and `--pending` (50) queued,
     every running session's home page open and 20 API clients (OpenPages below): hub RSS and CPU over
     `--watch` seconds (300), Slurm commands per minute, and p50 / p99 of what they ask.
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
import heapq
import random
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.perf.stats import ms, percentile
from tests.support.http import json_request
from tests.support.hub import ADMIN_TOKEN, FormBrowser
from tests.support.scale import HELD_PARTITION, ScaleRig, sessions_of, user_names

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


class OpenPages:
    """What 500 open home pages and 20 API clients ask of the hub, at their own pace, each request timed.

    An open home page asks for its session card and the user's jobs every 10 s, with what is
    free every third time (templates/home.html: one request, `?jobs=1&shares=1&free=1`); its
    person reloads it about once in `reload_every` seconds.  An API client (a script, a dashboard) asks for
    a user (GET /hub/api/users/NAME) once a second.  Each page and client
    starts at a random moment of its period.  A request is timed from its
    sending to its answer; a late one is sent late, never skipped.
    """

    KINDS = ("session cards, jobs, shares (GET /hub/api/dsportal/session?jobs=1&shares=1)", "with what is free (the same, &free=1)",
             "home page (GET /hub/home)", "GET /hub/api/users/NAME")  # fmt: skip

    def __init__(self, rig: ScaleRig, pages: list[str], clients: int = 20, reload_every: float = 120):
        self.rig = rig
        self.pages = pages
        self.clients = clients
        self.reload_every = reload_every
        self.browsers: dict[str, FormBrowser] = {}
        with ThreadPoolExecutor(10) as pool:
            for name, browser in zip(pages, pool.map(self.logged_in, pages), strict=True):
                self.browsers[name] = browser
        self.latency: dict[str, list[float]] = {kind: [] for kind in self.KINDS}
        self.errors: dict[str, int] = dict.fromkeys(self.KINDS, 0)
        self.stop = threading.Event()

    def logged_in(self, name: str) -> FormBrowser:
        browser = FormBrowser(self.rig.hub.url)
        status, _, _ = browser.login(name, "any")  # the rig's hub lets every user in (dummy authenticator)
        if status != 302:
            raise RuntimeError(f"{name} could not log in: {status}")
        return browser

    def ask(self, kind: str, ask) -> None:
        began = time.monotonic()
        try:
            status = ask()[0]
        except OSError:  # a timeout or a reset connection: an error, and the client goes on
            status = 0
        self.latency[kind].append(time.monotonic() - began)
        if status != 200:
            self.errors[kind] += 1

    def paced(self, schedule: list[tuple[float, float, list[tuple[str, object]]]]) -> None:
        """Run a schedule of (next time, period, [(kind, ask), ...]) until told to stop: the asks of one entry
        one after the other (a page reload, then its script's first refresh)."""
        queue = [(due, n, period, asks) for n, (due, period, asks) in enumerate(schedule)]  # n: no ties
        heapq.heapify(queue)
        while not self.stop.is_set():
            due, n, period, asks = heapq.heappop(queue)
            if self.stop.wait(max(0.0, due - time.monotonic())):
                return
            for kind, ask in asks:
                self.ask(kind, ask)
            heapq.heappush(queue, (due + period, n, period, asks))

    def page_schedule(self, names: list[str], t0: float) -> list:
        card, free, home, _ = self.KINDS
        schedule = []
        for name in names:
            b = self.browsers[name]
            first = t0 + random.uniform(0, 30.0)
            with_free = (free, lambda b=b: b.get("/hub/api/dsportal/session?jobs=1&shares=1&free=1"))
            alone = (card, lambda b=b: b.get("/hub/api/dsportal/session?jobs=1&shares=1"))
            reload = (home, lambda b=b: b.get("/hub/home"))
            schedule += [
                (first, 30.0, [with_free]),
                (first + 10, 30.0, [alone]),
                (first + 20, 30.0, [alone]),
                (t0 + random.uniform(0, self.reload_every), self.reload_every, [reload, with_free]),
            ]
        return schedule

    def client_schedule(self, running: list[str], t0: float) -> list:
        kind = self.KINDS[3]
        base = self.rig.hub.url

        def ask():
            return json_request("GET", f"{base}/hub/api/users/{random.choice(running)}", token=ADMIN_TOKEN)

        return [(t0 + random.uniform(0, 1.0), 1.0, [(kind, ask)])]

    def run(self, seconds: float, running: list[str], threads_for_pages: int = 50) -> tuple[list[int], float]:
        """Run the pages and clients for `seconds`; (RSS samples, average CPU in cores) of the hub meanwhile."""
        t0 = time.monotonic()
        names = list(self.browsers)
        schedules = [self.page_schedule(names[i::threads_for_pages], t0) for i in range(threads_for_pages)]
        schedules += [self.client_schedule(running, t0) for _ in range(self.clients)]
        rss, (_, cpu0) = [], self.rig.hub_usage()
        threads = [threading.Thread(target=self.paced, args=(s,), daemon=True) for s in schedules]
        for t in threads:
            t.start()
        while time.monotonic() - t0 < seconds:
            rss.append(self.rig.hub_usage()[0])
            time.sleep(5)
        self.stop.set()
        cores = (self.rig.hub_usage()[1] - cpu0) / (time.monotonic() - t0)
        for t in threads:
            t.join(60)
        return rss, cores


def profiler(rig: ScaleRig, svg: str | None, seconds: float) -> subprocess.Popen | None:
    """py-spy recording the hub for `seconds` into `svg` (py-spy on PATH: a developer's tool, not the portal's)."""
    if not svg:
        return None
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    argv = [spy, "record", "--pid", str(rig.hub.proc.pid), "--duration", str(int(seconds)), "--rate", "50"]
    argv += ["--output", svg] + (["--format", "raw"] if svg.endswith(".txt") else [])  # .txt: collapsed stacks
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


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
            owners = names[: args.sessions // args.per_user]
            running = sessions_of(owners, args.per_user)  # several sessions per user: "NAME/s2", ...
            queued = names[len(owners) : len(owners) + args.pending]

            print(f"[{db}] scenario 1: {args.sessions} sessions in waves of {args.wave}", flush=True)
            waves, failures = start_waves(rig, running, args.wave)
            results["1 wave time p50 / p95"] = f"{percentile(waves, 50):.1f} s / {percentile(waves, 95):.1f} s"
            results["1 start failures"] = str(len(failures))
            for why in failures[:5]:
                print(f"  failure: {why}")

            print(f"[{db}] scenario 2: {args.pending} queued, {args.watch:.0f} s of load", flush=True)
            refused = rig.start_sessions(queued, {**OPTIONS, "partition": HELD_PARTITION})
            rig.wait_for(lambda: rig.queue().get("PENDING", 0) >= len(queued) - len(refused), 120, "queued jobs")
            load = OpenPages(rig, owners)  # one open home page per user, whatever their sessions
            slurm0, t0 = rig.slurm_commands(), time.monotonic()
            profile = profiler(rig, args.profile, args.watch)
            rss, cores = load.run(args.watch, owners)
            if profile:
                profile.wait(60)
                print(f"  profile of the hub under this load: {args.profile}")
            minutes = (time.monotonic() - t0) / 60
            slurm1 = rig.slurm_commands()
            results["2 hub RSS max / mean"] = f"{max(rss) / 2**20:.0f} MB / {statistics.mean(rss) / 2**20:.0f} MB"
            results["2 hub CPU (cores, mean)"] = f"{cores:.2f}"
            for command in ("squeue", "sbatch", "scancel", "sinfo"):
                per_minute = (slurm1.get(command, 0) - slurm0.get(command, 0)) / minutes
                results[f"2 {command} per minute"] = f"{per_minute:.1f}"
            for kind, values in load.latency.items():
                results[f"2 {kind} p50 / p99"] = (
                    f"{ms(values, 50)} / {ms(values, 99)} ({len(values) / args.watch:.1f}/s, {load.errors[kind]} errors)"
                )
            if args.load_only:
                return results

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
    parser.add_argument(
        "--per-user", type=int, default=1, help="sessions each user runs at once (named ones after the first)"
    )
    parser.add_argument("--pending", type=int, default=50)
    parser.add_argument("--wave", type=int, default=50)
    parser.add_argument("--watch", type=float, default=300)
    parser.add_argument("--poll-interval", type=float, default=30, help="c.Spawner.poll_interval (JupyterHub's 30)")
    parser.add_argument("--db", choices=("postgresql", "sqlite", "both"), default="postgresql")
    parser.add_argument("--logins", action="store_true", help="also scenario 4 (a real slapd, 200 accounts)")
    parser.add_argument("--load-only", action="store_true", help="scenarios 1 and 2 only (no restart, no stop-all)")
    parser.add_argument(
        "--profile",
        metavar="SVG",
        help="py-spy's flame graph of the hub during scenario 2 (a .txt name: collapsed stacks)",
    )
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

"""One soak on the real dev cluster: set up, run the users, the faults and the watchers, put everything back, judge.

    report = run(Plan(minutes=5))          (as root, from the repository's root, with the portal's Python)

Threads: one per simulated user (tests/soak/users.py), one for the hostile
user's attacks (tests/soak/hostile.py: the last of the plan's users), one
injecting faults (tests/soak/faults.py), one sampling Slurm's queue, the hub's
sessions and its memory, one reading the sessions' tokens from their processes.  At the end the users stop,
the daemons are restored, every soak session is stopped through the hub and
every run cancelled, and the checks (tests/soak/invariants.py) read what was
recorded.  The daemons are restored and the soak users' jobs cancelled
whatever happens (finally).
"""

from __future__ import annotations

import json
import os
import pwd
import random
import re
import subprocess
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from deploy.dev import demo
from deploy.dev.portal import hub_answers
from portal.config import load_config
from tests.support.cluster import TOKEN_FILE

from . import faults, invariants
from .hostile import FORGED, HUB_LOG, NOTEBOOK, NOTEBOOK_MIB, Hostile, big_notebook, log_since
from .model import Ended, Harvest, HubMemory, Ledger, Probe, Sample
from .observe import hub_memory, parse_hub, session_tokens, squeue
from .report import Report
from .users import SCRIPT, SCRIPT_TEXT, Knobs, SoakUser, ask, token_works


def restarts_of(shown: str) -> int:
    """How many times Slurm requeued a job, from `scontrol -o show job`'s line (0 when it does not say; pure)."""
    found = re.search(r"\bRestarts=(\d+)", shown)
    return int(found.group(1)) if found else 0


@dataclass(frozen=True)
class Plan:
    minutes: float = 5.0
    users: int = demo.SOAK_COUNT
    faults: tuple[str, ...] = faults.KINDS
    fault_every: float = 40.0  # seconds between two faults' starts, on average
    seed: int = field(default_factory=lambda: random.randrange(10**6))
    think: tuple[float, float] = (3.0, 12.0)  # seconds between one user's operations
    sample_every: float = 3.0  # Slurm's queue and the hub's sessions
    harvest_every: float = 2.0  # the sessions' tokens from their processes
    orphan_grace: float = 60.0  # seconds a job may run without an owner in the hub (the reconciler's two passes)
    fault_grace: float = 30.0  # seconds after a daemon answered again in which a 5xx is still the fault's
    revoke_grace: float = 5.0  # seconds a revoked share's token may still work
    settle: float = 180.0  # seconds the end may take: every session stopped, every job gone
    record: str = ""  # a file for what was recorded, as JSON (calls, faults, ends, token tries; never a token)
    hostile: bool = True  # the last of the users attacks (tests/soak/hostile.py) while the others work
    wait_bound: float = 1.0  # seconds another user's request the hub answers by itself may wait outside a fault
    memory_slack: int = 200 * 2**20  # bytes the hub's memory may end above where it began
    memory_settle: float = 60.0  # seconds the hub has at the end to come back within memory_slack


# the requests the hub answers from what it holds (its sessions, shares, a shared cached Slurm listing): the other
# users' waits on them are the hub's; a start, stop, extend, job, cancel or login waits on sbatch, scancel, the root
# helper or the directory by design
HUB_ANSWERED = frozenset({"look", "share", "revoke"})


class Admin:
    """The hub's admin API with the dev cluster's admin token."""

    def __init__(self):
        self.token = TOKEN_FILE.read_text().strip()

    def __call__(self, method: str, path: str, body=None) -> tuple[int, object]:
        status, answer, _ = ask(method, path, self.token, body)
        return status, answer


@contextmanager
def said_and_survived(what: str):
    """A watcher's own mistake is printed and the watcher goes on (a dead thread would leave the checks blind)."""
    try:
        yield
    except Exception:
        print(f"soak: {what} failed in the soak itself:\n{traceback.format_exc()}", file=sys.stderr)


def _wait(predicate, timeout: float, every: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


class Soak:
    def __init__(self, plan: Plan):
        least = 3 if plan.hostile else 2  # two who share with each other, and the hostile one
        if plan.users > len(demo.SOAK_USERS) or plan.users < least:
            raise ValueError(f"a soak drives {least} to {len(demo.SOAK_USERS)} users (deploy/dev/demo.py's SOAK_USERS)")
        self.plan = plan
        self.people = demo.SOAK_USERS[: plan.users]
        self.names = [u.name for u in self.people]
        self.hostile = self.names[-1] if plan.hostile else ""
        self.workers = [u for u in self.people if u.name != self.hostile]
        self.uids = {pwd.getpwnam(n).pw_uid: n for n in self.names}
        self.settings = load_config()
        self.admin = Admin()
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.users: list[SoakUser] = []

    # --- the watchers -----------------------------------------------------------------------------------------------
    def sample(self) -> Sample:
        status, users = self.admin("GET", "/hub/api/users?include_stopped_servers=1")
        hub = parse_hub(users, set(self.names)) if status == 200 and isinstance(users, list) else None
        try:
            jobs = tuple(squeue(self.names))
        except (subprocess.SubprocessError, OSError):
            jobs = None  # slurmctld away: this sample says nothing of Slurm
        return Sample(time.time(), jobs, hub)

    def sampler(self) -> None:
        while not self.stop.wait(self.plan.sample_every):
            with said_and_survived("sampling Slurm and the hub"):
                self.ledger.add("samples", self.sample())
                self.ledger.add("pids", (time.time(), faults.pids()))
                if (memory := hub_memory()) is not None:
                    self.ledger.add("memory", memory)

    def harvester(self) -> None:
        while not self.stop.wait(self.plan.harvest_every):
            with said_and_survived("reading the sessions' tokens"):
                for token, user, server, job_id in session_tokens(self.uids):
                    self.ledger.harvested(Harvest(token, user, server, job_id, time.time()))

    # --- before and after -------------------------------------------------------------------------------------------
    def check_cluster(self) -> None:
        if os.geteuid() != 0:
            raise SystemExit("soak: run me as root: I stop and start the dev cluster's daemons and read /proc.")
        if not _wait(lambda: not faults.down() and hub_answers(), 120, every=2):  # another's outage test may end soon
            raise SystemExit(
                "soak: the dev cluster is not whole (deploy/devcluster status); run deploy/devcluster up first."
            )

    def stop_everything(self) -> None:
        """Every soak session stopped through the hub, every run cancelled, until the hub and Slurm hold none."""
        for name in self.names:
            status, user = self.admin("GET", f"/hub/api/users/{name}")
            for server in (user.get("servers") or {}) if status == 200 and isinstance(user, dict) else {}:
                self.admin("DELETE", f"/hub/api/users/{name}/servers/{server}")

        def quiet() -> bool:
            sample = self.sample()
            running = sample.hub is None or any(s.running for s in sample.hub.servers)
            sessions = [j for j in sample.holding if j.name == self.settings.slurm.job_name]
            return not running and sample.jobs is not None and not sessions

        def no_job() -> bool:
            sample = self.sample()
            return sample.jobs is not None and not sample.holding

        _wait(quiet, self.plan.settle)
        _wait(no_job, 90)  # the runs end by themselves (20 s)
        if self.cancel_requeued():
            _wait(no_job, 30)

    def cancel_requeued(self) -> list[str]:
        """Runs Slurm requeued after a fault (a killed slurmd: JobRequeue reruns a job of a node it counted as
        failed, after a hold of minutes) cancelled as root, and said; any other job left stays a violation."""
        cancelled = []
        for job in self.sample().holding:
            shown = subprocess.run(
                ["scontrol", "-o", "show", "job", job.job_id], capture_output=True, text=True, timeout=30, check=False
            ).stdout
            if restarts_of(shown) > 0:
                subprocess.run(["scancel", "--quiet", job.job_id], timeout=30, check=False)
                print(
                    f"soak: job {job.job_id} of {job.user} was requeued by Slurm after a fault: cancelled", flush=True
                )
                cancelled.append(job.job_id)
        return cancelled

    def cancel_jobs(self) -> None:
        """As root: whatever jobs the soak users still have cancelled, whatever the hub knows of them."""
        for user in self.names:
            subprocess.run(["scancel", "--quiet", f"--user={user}"], timeout=30, check=False)

    def prepare(self) -> dict[str, str]:
        """The users in the hub, a token each, a tiny job script in each home, nothing left of an earlier soak."""
        tokens = {}
        for u in self.people:
            if self.admin("GET", f"/hub/api/users/{u.name}")[0] == 404:
                self.admin("POST", f"/hub/api/users/{u.name}")
            status, made = self.admin(
                "POST",
                f"/hub/api/users/{u.name}/tokens",
                {"note": "soak", "expires_in": int(self.plan.minutes * 60 + 3600)},
            )
            if status != 201:
                raise SystemExit(f"soak: the hub made no token for {u.name} ({status}: {made})")
            tokens[u.name] = made["token"]
            script = Path(pwd.getpwnam(u.name).pw_dir) / SCRIPT
            script.write_text(SCRIPT_TEXT)
            os.chown(script, pwd.getpwnam(u.name).pw_uid, pwd.getpwnam(u.name).pw_gid)
            script.chmod(0o700)
        if self.hostile:
            self.write_as(self.hostile, NOTEBOOK, big_notebook(NOTEBOOK_MIB))
        self.stop_everything()
        self.cancel_jobs()  # an earlier soak's, if it was killed before its end
        return tokens

    @staticmethod
    def write_as(name: str, path: str, text: str) -> None:
        target = Path(pwd.getpwnam(name).pw_dir) / path
        target.write_text(text)
        os.chown(target, pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid)

    def victims(self) -> list[tuple[str, str]]:
        """(user, server) of the other users' sessions the hub last showed ready: what the hostile user floods."""
        with self.ledger.lock:
            last = next((s.hub for s in reversed(self.ledger.samples) if s.hub is not None), None)
        return sorted((s.user, s.server) for s in last.servers if s.ready and s.user != self.hostile) if last else []

    def settle_memory(self) -> None:
        """The hub's memory read until it is back within the slack of its baseline, or the settle deadline passed."""
        baseline = invariants.memory_baseline(self.ledger.memory, self.ledger.faults)

        def settled() -> bool:
            now = hub_memory()
            return now is not None and (
                baseline is None or now.pid != baseline.pid or now.rss - baseline.rss <= self.plan.memory_slack
            )

        _wait(settled, self.plan.memory_settle, every=2)
        if (memory := hub_memory()) is not None:
            self.ledger.add("memory", memory)

    def end_tokens(self, ended: list[Ended], final: Sample) -> None:
        """Every token read from a session that ended, tried now that the soak stopped every session."""
        ended_at = {e.job_id: e.at for e in ended}
        still = {s.job_id for s in final.hub.servers if s.running} if final.hub else set()
        for harvest in list(self.ledger.harvests.values()):
            if harvest.job_id in still:
                continue  # a session the soak could not stop: reported as such (invariants.leftovers)
            status = token_works(harvest.token)
            after = ended_at.get(harvest.job_id, final.at)
            self.ledger.add(
                "probes",
                Probe("ended session", harvest.user, harvest.server, harvest.job_id, after, time.time(), status),
            )

    # --- the run --------------------------------------------------------------------------------------------------
    def run(self) -> Report:
        plan = self.plan
        self.check_cluster()
        tokens = self.prepare()
        rng = random.Random(plan.seed)
        knobs = Knobs(think=plan.think, revoke_grace=plan.revoke_grace)
        self.users = users = [
            SoakUser(
                u.name,
                u.password,
                tokens[u.name],
                [w.name for w in self.workers if w.name != u.name],
                self.ledger,
                rng.randrange(10**9),
                knobs,
            )
            for u in self.workers
        ]
        # each user's first look, before the clock: the hub's first Slurm listing since its start, and each
        # user's first login to it, are no wait of the soak's (a hub restart's own window covers them later)
        for user in users:
            user.last_look()
        started, self.log_offset = time.time(), HUB_LOG.stat().st_size
        if (memory := hub_memory()) is not None:
            self.ledger.add("memory", memory)
        injector = faults.Injector(
            plan.faults, plan.fault_every, self.ledger, rng.randrange(10**9), started + plan.minutes * 60
        )
        threads = [threading.Thread(target=u.run, args=(self.stop,), daemon=True) for u in users]
        threads += [threading.Thread(target=t, daemon=True) for t in (self.sampler, self.harvester)]
        if self.hostile:
            hostile = Hostile(self.hostile, tokens[self.hostile], self.ledger, self.victims)
            threads.append(threading.Thread(target=hostile.run, args=(self.stop,), daemon=True))
        threads.append(threading.Thread(target=injector.run, args=(self.stop,), daemon=True))
        self.ledger.add("pids", (time.time(), faults.pids()))
        try:
            for t in threads:
                t.start()
            self.stop.wait(plan.minutes * 60)
        finally:
            self.stop.set()
            acted = time.time() - started
            for t in threads:
                t.join(timeout=300)
            restore_problems = faults.restore_all()
            try:
                self.stop_everything()
                final = self.sample()  # what the soak leaves behind, before anything is forced
                self.settle_memory()
            finally:
                self.cancel_jobs()
                if kept := faults.release_kept_gpus():
                    print(f"soak: Slurm still counted ended jobs' GPUs on {', '.join(kept)}; slurmctld restarted")
        return self.judge(acted, final, restore_problems)

    def write_record(self, ended, others, violations) -> None:
        ledger = self.ledger
        kept = {
            "plan": asdict(self.plan),
            "calls": ledger.calls,
            "faults": ledger.faults,
            "others": others,
            "ended": ended,
            "revocations": ledger.revocations,
            "probes": ledger.probes,
            "attacks": ledger.attacks,
            "memory": ledger.memory,
            "violations": violations,
        }
        text = json.dumps({k: [asdict(x) for x in v] if isinstance(v, list) else v for k, v in kept.items()}, indent=1)
        Path(self.plan.record).write_text(text)

    def judge(self, seconds: float, final: Sample, restore_problems: list[str]) -> Report:
        self.ledger.add("samples", final)
        for user in self.users:  # each history read once more, now that every session ended
            if final.hub is not None:
                _wait(user.last_look, 60)
        ended = invariants.ended_sessions(self.ledger.samples)
        self.end_tokens(ended, final)
        ledger, s = self.ledger, self.settings
        ledger.add("pids", (time.time(), faults.pids()))
        others = invariants.restarts_by_others(ledger.pids, ledger.faults)
        violations = [
            *invariants.over_limits(
                ledger.samples, s.slurm.job_name, s.sessions.max_per_user, s.sessions.max_gpus_per_user
            ),
            *invariants.orphans(ledger.samples, self.plan.orphan_grace),
            *invariants.live_tokens(ledger.probes),
            *invariants.lost_history(ended, ledger.snapshots, s.sessions.history),
            *invariants.wordless(ledger.calls),
            *invariants.unexplained(ledger.calls, ledger.faults + others, self.plan.fault_grace),
            *invariants.leftovers(final, faults.down(faults.WATCHED), restore_problems),
            *self.hostile_checks(ledger.faults + others),
        ]
        watched = {
            "samples of Slurm and the hub": len(ledger.samples),
            "sessions ended": len(ended),
            "session tokens read from their processes": len(ledger.harvests),
            "shares revoked": len(ledger.revocations),
            "token tries": len(ledger.probes),
            "history reads": len(ledger.snapshots),
        }
        if self.plan.record:
            self.write_record(ended, others, violations)
        report = Report(
            self.plan.users, seconds, self.plan.seed, ledger.calls, ledger.faults, watched, violations, others
        )
        report.hostile, report.attacks = self.hostile, ledger.attacks
        report.waits = invariants.waits(ledger.calls, ledger.faults + others, self.plan.fault_grace, HUB_ANSWERED)
        base = invariants.memory_baseline(ledger.memory, ledger.faults + others)
        report.memory = (ledger.memory[0] if ledger.memory else None, base, self.last_memory())
        return report

    def last_memory(self) -> HubMemory | None:
        return self.ledger.memory[-1] if self.ledger.memory else None

    def hostile_checks(self, windows) -> list:
        """The promises the hostile user tests: the others' waits, the hub's memory, its log, the attacks' words."""
        plan, ledger = self.plan, self.ledger
        found = [
            *invariants.slow_requests(ledger.calls, windows, plan.fault_grace, HUB_ANSWERED, plan.wait_bound),
            *invariants.hub_memory(ledger.memory, windows, plan.memory_slack),
        ]
        if self.hostile:
            sent = sum(n for a in ledger.attacks if a.kind == "forge" for status, n in a.statuses if status == 200)
            found += invariants.forged_records(log_since(self.log_offset), FORGED, sent)
            found += invariants.wordless_attacks(ledger.attacks)
        return found


def run(plan: Plan) -> Report:
    return Soak(plan).run()

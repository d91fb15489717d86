"""A simulated portal user: starts, stops, extends, shares, revokes, runs jobs and logs in, at random.

Each user is a thread with its own API token (made by the admin) and its own
random stream; it acts on what it last saw of its sessions (GET
/hub/api/dsportal/session), and sometimes on a name it does not hold, as a
person with a stale page does: the hub must answer that with words too.
Every request is recorded as a Call; nothing here judges the answers (the
checks do, in tests/soak/invariants.py).
"""

from __future__ import annotations

import http.client
import random
import sys
import threading
import time
import traceback
import urllib.error
from dataclasses import dataclass, field
from urllib.parse import quote

from tests.support.cluster import HUB, url_for
from tests.support.http import json_request
from tests.support.hub import form_login

from .model import Call, Ledger, Probe, Revocation, Snapshot
from .observe import history_entries, login_words, message_of

NAMES = ("s1", "s2", "s3", "s4")  # one more than sessions.max_per_user allows on the dev cluster
SCRIPT = "soak-job.sh"  # in each soak user's home (written by the driver)
SCRIPT_TEXT = '#!/bin/bash\necho "soak job $SLURM_JOB_ID on $(hostname)"\nsleep 20\n'
# how often each operation is chosen
WEIGHTS = {
    "start": 16,
    "stop": 10,
    "extend": 8,
    "share": 12,
    "revoke": 10,
    "job": 8,
    "cancel": 4,
    "look": 12,
    "login": 4,
}
REQUEST_TIMEOUT = 60.0
SHARES = "/hub/api/dsportal/shares"
LOOK = "/hub/api/dsportal/session?shares=1&jobs=1"  # the home page's refresh: sessions, history, shares, jobs


def ask(method: str, path: str, token: str, body=None, timeout: float = REQUEST_TIMEOUT) -> tuple[int, object, str]:
    """(status, parsed body, why there was no answer): status 0 when the hub or its proxy did not answer."""
    try:
        status, answer = json_request(method, url_for(path), body, token=token, timeout=timeout)
        return status, answer, ""
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        return 0, None, f"{type(e).__name__}: {e}"


def token_works(token: str) -> int:
    """The status GET /hub/api/user answers with this token: 200 while it works."""
    return ask("GET", "/hub/api/user", token, timeout=30)[0]


@dataclass
class Knobs:
    think: tuple[float, float] = (3.0, 12.0)  # seconds between a user's operations
    revoke_grace: float = 5.0  # seconds a revoked share's token may still work after the revoke was answered
    stale: float = 8.0  # a view older than this is read again before acting on it


@dataclass
class View:
    """What the user last saw: sessions (name -> card state, job id), shares (server, guest), active runs."""

    at: float = 0.0
    sessions: dict[str, tuple[str, str]] = field(default_factory=dict)
    shares: set[tuple[str, str]] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)


class SoakUser:
    def __init__(
        self, name: str, password: str, token: str, guests: list[str], ledger: Ledger, seed: int, knobs: Knobs
    ):
        self.name, self.password, self.token = name, password, token
        self.guests = guests
        self.ledger = ledger
        self.rng = random.Random(seed)
        self.knobs = knobs
        self.view = View()
        self.submitted: set[str] = set()  # run job ids

    # --- the loop -------------------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.rng.uniform(*self.knobs.think)):
            if time.time() - self.view.at > self.knobs.stale:
                self.look()
            weights = {**WEIGHTS, "revoke": WEIGHTS["revoke"] * (3 if self.view.shares else 0)}  # revoke what it shared
            op = self.rng.choices(list(weights), weights=list(weights.values()))[0]
            try:
                getattr(self, op)()
            except Exception:  # the soak's own mistake: said, and the user goes on (a dead thread would skew it)
                print(f"soak: {self.name}'s {op} failed in the soak itself:\n{traceback.format_exc()}", file=sys.stderr)

    def call(self, op: str, method: str, path: str, body=None) -> tuple[int, object]:
        started = time.time()
        status, answer, error = ask(method, path, self.token, body)
        self.ledger.add(
            "calls", Call(self.name, op, method, path, started, time.time(), status, message_of(answer), error)
        )
        return status, answer

    def live(self, *states: str) -> list[str]:
        return [name for name, (state, _) in self.view.sessions.items() if state in states]

    def target(self, *states: str) -> str:
        """One of the sessions in `states`; now and then any name (a stale page); "" when the user, holding none,
        starts one instead."""
        held = self.live(*states)
        if held and self.rng.random() > 0.1:
            return self.rng.choice(held)
        if not held and self.rng.random() < 0.7:
            self.start()
            return ""
        return self.rng.choice(NAMES)

    # --- operations -----------------------------------------------------------------------------------------------
    def look(self) -> None:
        status, answer = self.call("look", "GET", LOOK)
        if status == 200 and isinstance(answer, dict):
            self.saw(answer)

    def last_look(self) -> bool:
        """The history once more after the soak (not an operation of the soak's); whether the hub answered."""
        status, answer, _ = ask("GET", LOOK, self.token)
        if status == 200 and isinstance(answer, dict):
            self.saw(answer)
        return status == 200

    def saw(self, answer: dict) -> None:
        now = time.time()
        self.view = View(
            now,
            {
                s["name"]: (s["session"].get("state", ""), str(s["session"].get("job_id", "")))
                for s in answer.get("sessions", [])
                if s.get("name")
            },
            {(c["server"], c["name"]) for c in (answer.get("shares") or {}).get("mine", []) if c.get("kind") == "user"},
            {
                str(r["job_id"])
                for r in answer.get("jobs") or []
                if r.get("active") and str(r["job_id"]) in self.submitted
            },
        )
        self.ledger.add("snapshots", Snapshot(self.name, now, history_entries(answer)))

    def start(self) -> None:
        options = {
            "partition": self.rng.choice(["sxm2", "sxm2", "debug"]),
            "gpus": self.rng.choice([0, 0, 1]),
            "hours": self.rng.choice([0.25, 0.5, 1]),
        }
        name = self.rng.choice(NAMES)
        if self.call("start", "POST", f"/hub/api/users/{self.name}/servers/{name}", options)[0] in (201, 202):
            self.view.sessions[name] = ("starting", "")

    def stop(self) -> None:
        name = self.target("running", "starting", "queued")
        if name:
            self.call("stop", "DELETE", f"/hub/api/users/{self.name}/servers/{name}")

    def extend(self) -> None:
        name = self.target("running")
        if name:
            self.call("extend", "POST", f"/hub/api/dsportal/session/extend?server={name}")

    def share(self) -> None:
        name, guest = self.target("running"), self.rng.choice(self.guests)
        if name and self.call("share", "POST", SHARES, {"server": name, "user": guest, "hours": 1})[0] == 200:
            self.view.shares.add((name, guest))

    def revoke(self) -> None:
        server, guest = self.rng.choice(sorted(self.view.shares))
        status, _ = self.call("revoke", "DELETE", f"{SHARES}?server={quote(server)}&user={guest}")
        self.view.shares.discard((server, guest))
        job_id = self.view.sessions.get(server, ("", ""))[1]
        if status == 200 and job_id:
            revoked = Revocation(self.name, server, guest, job_id, time.time())
            self.ledger.add("revocations", revoked)
            self.try_copied_tokens(revoked)

    def try_copied_tokens(self, revoked: Revocation) -> None:
        """What the guest copied while shared (the session's token) is tried until it fails, up to the grace."""
        for harvest in self.ledger.tokens_of(revoked.job_id, revoked.at):
            deadline = revoked.at + self.knobs.revoke_grace
            status = token_works(harvest.token)
            while status == 200 and time.time() < deadline:
                time.sleep(0.5)
                status = token_works(harvest.token)
            self.ledger.add(
                "probes",
                Probe("revoked share", self.name, revoked.server, revoked.job_id, revoked.at, time.time(), status),
            )

    def job(self) -> None:
        body = {"path": SCRIPT, "partition": "sxm2", "gpus": 0, "hours": 0.1}
        status, answer = self.call("job", "POST", "/hub/api/dsportal/runs", body)
        if status == 201 and isinstance(answer, dict):
            self.submitted.add(str(answer["job"]["job_id"]))
            self.view.runs.add(str(answer["job"]["job_id"]))

    def cancel(self) -> None:
        if not self.view.runs:
            return self.job()
        job_id = self.rng.choice(sorted(self.view.runs))
        self.view.runs.discard(job_id)
        self.call("cancel", "POST", f"/hub/api/dsportal/runs/{job_id}/cancel")

    def login(self) -> None:
        started = time.time()
        try:
            status, page, _ = form_login(HUB, self.name, self.password, timeout=REQUEST_TIMEOUT)
            words, error = login_words(page), ""
        except (
            urllib.error.HTTPError
        ) as e:  # the login page itself was refused (the proxy's answer while the hub is away)
            status, words, error = e.code, login_words(e.read().decode(errors="replace")), ""
        except (urllib.error.URLError, OSError, http.client.HTTPException, AttributeError) as e:
            status, words, error = 0, "", f"{type(e).__name__}: {e}"  # AttributeError: a page without a login form
        self.ledger.add(
            "calls", Call(self.name, "login", "POST", "/hub/login", started, time.time(), status, words, error)
        )

"""The soak's hostile user: while the others work, it attacks the portal in rounds (issue 55's attacks).

    python -m tests.soak.hostile reads|forge|offers TARGET [SECONDS]     (its token in SOAK_HOSTILE_TOKEN)

- reads: 30 reads at once of a ~19 MiB notebook in its home through the run
  dialog's endpoint (GET /hub/api/dsportal/runs/form?path=...), within the
  per-user read limit: parsed in the hub, they once stalled every other
  request for up to 3.26 s and left the hub 700 MiB bigger.
- forge: a stop-sharing request of its unnamed session whose guest name holds
  `\\r`, `\\r\\n` and U+2028, each before a record in the hub's log format; the
  hub logs the name ("soakNN stopped sharing your unnamed session with user
  ...").  This is a cheap stand-in for a sweep whose results hold such a key
  (tests/integration/test_log_forgery.py): that key reaches the log only once
  the sweep's tasks ran on Slurm, minutes; this one at once, every round.
- offers: for SECONDS, a flood of token offers without credentials from one
  address, to a running session of another user through the proxy
  (POST {session}dsportal/session/token, which anyone who reaches the session
  may send); 8 connections kept open.  The session once asked the hub about
  each (~130 questions a second, which slowed the others' requests past 1 s);
  now it refuses an offer without the hub's proof by itself.

Each round is a process of its own (the driver's `Hostile` thread starts it):
its threads and JSON take no turn of the interpreter lock of the soak's
process, which times the other users' requests.  A round prints one JSON line:
{"statuses": {status: count}, "wordless": refusals of the hub's without words}.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import ssl
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlsplit

from spawner.contract import TOKEN_PUSH_PATH
from tests.support.cluster import url_for

from .model import Attack, Ledger
from .observe import message_of
from .users import ask

TOKEN_VARIABLE = "SOAK_HOSTILE_TOKEN"
NOTEBOOK = "soak-huge.ipynb"  # in the hostile user's home (written by the driver)
NOTEBOOK_MIB = 19  # within the dev cluster's runs.max_notebook_mib
READS = 30
OFFER_CONNECTIONS = 8
HUB_LOG = Path("/var/log/dsportal-dev/jupyterhub.out")
# a record of the hub's own format; what follows a line break in the guest's name
FORGED = "[W 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to soak-forger"
FORGED_NAME = f"x\r{FORGED}\r\n{FORGED}\u2028{FORGED}"
ROOT = Path(__file__).resolve().parents[2]


def big_notebook(mib: float) -> str:
    """An nbformat 4 notebook of about `mib` MiB: a parameters cell, then code cells with long stored outputs."""
    output = {"output_type": "stream", "name": "stdout", "text": ["loss 0.123456789 accuracy 0.987654321\n"] * 40}
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [output], "source": "train()\n"}
    params = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "outputs": [], "source": "lr = 0.01\n"}
    count = int(mib * 2**20 / (len(json.dumps(cell)) + 12))
    cells = [params] + [{**cell, "id": f"c{i}"} for i in range(count)]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def tally(answers: list[tuple[int, object]]) -> dict:
    statuses = Counter(status for status, _ in answers)
    wordless = sum(1 for status, body in answers if 400 <= status < 500 and not message_of(body))  # as wordless()
    return {"statuses": dict(statuses), "wordless": wordless}


def reads(token: str, path: str) -> dict:
    with ThreadPoolExecutor(READS) as pool:
        answers = list(
            pool.map(lambda _: ask("GET", f"/hub/api/dsportal/runs/form?path={quote(path)}", token), range(READS))
        )
    return tally([(status, body) for status, body, _ in answers])


def forge(token: str) -> dict:
    path = f"/hub/api/dsportal/shares?server=&user={quote(FORGED_NAME)}"
    return tally([ask("DELETE", path, token)[:2] for _ in range(3)])


def _offer_flood(url: str, deadline: float, counts: Counter, lock: threading.Lock) -> None:
    parts = urlsplit(url)
    context = ssl.create_default_context()  # the dev cluster's CA is in the machine's trust store
    connection = None
    while time.monotonic() < deadline:
        if connection is None:
            connection = http.client.HTTPSConnection(parts.hostname, parts.port, context=context, timeout=30)
        body = json.dumps({"token": secrets.token_hex(16)})
        try:
            connection.request("POST", parts.path, body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            status = answer.status
            if answer.will_close:
                connection.close()
                connection = None
        except (OSError, http.client.HTTPException):
            status = 0
            connection.close()
            connection = None
            time.sleep(0.2)  # the proxy is away (a fault): a refused connection is no offer
        with lock:
            counts[status] += 1


def offers(url: str, seconds: float) -> dict:
    counts: Counter = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    with ThreadPoolExecutor(OFFER_CONNECTIONS) as pool:
        for _ in range(OFFER_CONNECTIONS):
            pool.submit(_offer_flood, url, deadline, counts, lock)
    return {"statuses": dict(counts), "wordless": 0}  # the session's answers, not the hub's: its words not judged


def offer_url(user: str, server: str) -> str:
    return url_for(f"/user/{user}/{quote(server)}/{TOKEN_PUSH_PATH}")


def main(argv: list[str]) -> int:
    kind, target = argv[0], argv[1]
    token = os.environ[TOKEN_VARIABLE]
    if kind == "reads":
        answer = reads(token, target)
    elif kind == "forge":
        answer = forge(token)
    elif kind == "offers":
        answer = offers(target, float(argv[2]))
    else:
        raise SystemExit(f"no attack {kind!r}: reads, forge or offers")
    print(json.dumps(answer), flush=True)
    return 0


# --- in the soak's process --------------------------------------------------------------------------------------


def log_since(offset: int, log: Path = HUB_LOG) -> str:
    """The hub's log from `offset` on (all of it when it was rotated meanwhile and is shorter now)."""
    data = log.read_bytes()
    return data[offset if len(data) >= offset else 0 :].decode(errors="replace")


class Hostile:
    """The hostile user's thread: reads, forge and offers in turn, each round a process, until the soak stops."""

    def __init__(self, name: str, token: str, ledger: Ledger, victims: Callable[[], list[tuple[str, str]]]):
        self.name, self.token, self.ledger, self.victims = name, token, ledger, victims
        self.offer_seconds = 20.0
        self.pause = 2.0

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            for kind in ("reads", "forge", "offers"):
                if stop.is_set():
                    return
                try:
                    self.round(kind)
                except Exception:  # the soak's own mistake: said, and the attacks go on
                    print(
                        f"soak: the hostile {kind} failed in the soak itself:\n{traceback.format_exc()}",
                        file=sys.stderr,
                    )
            stop.wait(self.pause)

    def target(self, kind: str) -> str:
        if kind == "reads":
            return NOTEBOOK
        if kind == "forge":
            return "the hub's log"
        victims = self.victims()
        return offer_url(*victims[len(self.ledger.attacks) % len(victims)]) if victims else ""

    def round(self, kind: str) -> None:
        target, started = self.target(kind), time.time()
        if not target:
            return  # no other user's session runs now: nothing to flood
        # at the lowest CPU priority: a hostile user's client runs on their own machine, not the head node, and
        # here the soak's one machine plays both (its CPU is what the others' requests are timed against)
        argv = ["nice", "-n", "19", sys.executable, "-m", "tests.soak.hostile", kind, target, str(self.offer_seconds)]
        try:
            done = subprocess.run(
                argv,
                env={**os.environ, TOKEN_VARIABLE: self.token},
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=self.offer_seconds + 120,
                check=True,
            )
            answer = json.loads(done.stdout.splitlines()[-1])
            statuses = tuple(sorted((int(s), n) for s, n in answer["statuses"].items()))
            attack = Attack(kind, target, started, time.time(), statuses, answer["wordless"])
        except (subprocess.SubprocessError, OSError, ValueError, IndexError, KeyError) as e:
            stderr = getattr(e, "stderr", "") or ""
            attack = Attack(kind, target, started, time.time(), (), error=f"{e} {stderr[-300:]}".strip())
        self.ledger.add("attacks", attack)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

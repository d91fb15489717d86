"""One loop for the whole hub: notices runs that ended and sessions whose time runs out, and says so.

Every `runs.list_seconds` it reads the shared listing (spawner/hub/slurm/joblisting.py: no
Slurm call of its own beyond the shared squeue and sacct) for the users who
have runs whose end it has not seen.  A run has ended when squeue or the
accounting lists it in a final state, or when neither has listed it for
`GONE_AFTER` seconds after its submission.  Then it reads the run's log tail
once, as the user (the runner's words: the failed cell, a stop at the time
limit), writes why it ended into the user's record, and mails the user who
opted in (spawner/hub/base/notices.py).  JupyterLab and the home page show the same rows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from ...slurmvocab import ENDING, PENDING, RUNNING
from ..base.notices import (
    minutes_left_mail,
    now_text,
    open_runs,
    run_ended_mail,
    sweep_ended_mail,
    tell,
    unsent_notice,
)
from ..clock.extension import seconds_left
from ..request.refusal import SessionRefused
from ..session.userrecord import save_user_record, user_record
from .board import ended_why, read_outcome
from .sweepboard import counts, counts_words
from .sweeps import ended as sweep_ended
from .sweeps import ended_state, grouped, states_of, table

log = logging.getLogger("JupyterHub").getChild("runs")

GONE_AFTER = 300  # s: a run neither squeue nor the accounting lists this long after its submission has ended
LOG_LINES = 60
SAME_JOB_SLACK = 120  # s: clocks of the hub and slurmctld, and the minute-rounded submission
MAILS_AT_ONCE = 4  # mails in flight from the tracker; a slow relay holds these, never a round
READS_AT_ONCE = 4  # sweeps whose results the tracker reads at once (one head as the user each)
RESULTS_TRIES = 3  # rounds a sweep's results are tried before its end is said without them
IN_QUEUE = PENDING | RUNNING | ENDING


def _epoch(timestamp: str) -> float:
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0


def final_state(job_id: str, listed: list, accounted: list, submitted_ts: float, now: float) -> str | None:
    """The run's final state ("" for ended without a word), None while it is (or may be) in the queue (pure).

    An accounting entry of the same id submitted well before the run is another job (Slurm's ids start
    again after its state is reset): it says nothing of this run.
    """
    in_listing = next((j for j in listed if j.job_id == job_id), None)
    if in_listing is not None:
        return None if in_listing.state in IN_QUEUE else in_listing.state
    in_accounting = next(
        (j for j in accounted if j.job_id == job_id and _epoch(j.submitted) >= submitted_ts - SAME_JOB_SLACK), None
    )
    if in_accounting is not None:
        return None if in_accounting.state in IN_QUEUE else in_accounting.state
    return "" if now - submitted_ts > GONE_AFTER else None


class Tracker:
    def __init__(self, services, spawners: Callable[[], Iterable], public_url: Callable[[], str]):
        self.services = services
        self.spawners = spawners  # the hub's portal spawners (one per user with a record)
        self.public_url = public_url
        self.rounds = 0
        self._sending = asyncio.Semaphore(MAILS_AT_ONCE)
        self._mails: set[asyncio.Task] = set()
        self._reading = asyncio.Semaphore(READS_AT_ONCE)
        self._finishing: dict[tuple[str, str], asyncio.Task] = {}  # the sweeps whose results are being read

    async def run_forever(self) -> None:
        while True:
            try:
                await self.round()
            except Exception:  # one bad round must not end the notices for everyone
                log.exception("The runs tracker's round failed; it tries again")
            await asyncio.sleep(self.services.settings.runs.list_seconds)

    async def round(self) -> None:
        self.rounds += 1
        followed: set[str] = set()  # a user's runs once a round, whichever of their sessions is met first
        for spawner in list(self.spawners()):
            try:
                if spawner.user.name not in followed and open_runs(user_record(spawner).runs):
                    followed.add(spawner.user.name)
                    await self._runs_of(spawner)
                await self._time_left(spawner)
            except Exception:  # one user's trouble (an account refused since) must not stop everyone's notices
                log.exception("The runs tracker could not follow %s's jobs this round", spawner.user.name)

    def _mail(self, spawner, opted_in: bool, subject: str, body: str, run: dict | None = None) -> None:
        """Send in the background, at most MAILS_AT_ONCE at a time: a hung relay never holds a round.  A mail
        about `run` that could not be sent is said in the run's row (the jobs panel, the home page)."""

        async def send() -> None:
            async with self._sending:
                why = await tell(self.services.settings.notify, spawner.user, opted_in, subject, body)
            if why and run is not None:
                what = f"{'sweep' if run.get('sweep') else 'job'} {run['job_id']}"
                run["why"] = f"{run.get('why', '')} {unsent_notice(what, why)}".strip()
                save_user_record(spawner)

        task = asyncio.ensure_future(send())
        self._mails.add(task)  # held until sent: the loop keeps only weak references to tasks
        task.add_done_callback(self._mails.discard)

    async def _runs_of(self, spawner) -> None:
        name = spawner.user.name
        listed, accounted, problems = await self.services.listing.of_user(name)
        if problems:
            return  # a source did not answer: no end is concluded from a partial view
        changed = False
        runs = user_record(spawner).runs
        sweeps = {r["job_id"] for r in open_runs(runs) if r.get("sweep")}
        queued, done = grouped(listed, sweeps), grouped(accounted, sweeps)  # one pass, never one per sweep
        for run in open_runs(runs):
            submitted_ts = run.get("submitted_ts") or 0.0
            if run.get("sweep"):
                self._sweep_ended(spawner, run, queued[run["job_id"]], done[run["job_id"]], submitted_ts)
                continue
            state = final_state(run["job_id"], listed, accounted, submitted_ts, time.time())
            if state is None:
                continue
            await self._ended(spawner, run, state, accounted)
            changed = True
        if changed:
            save_user_record(spawner)

    async def _ended(self, spawner, run: dict, state: str, accounted: list) -> None:
        name = spawner.user.name
        try:
            home = spawner.unix_account().home.rstrip("/")
            tail = await self.services.client.output_tail(name, f"{home}/{run.get('log', '')}", LOG_LINES)
        except SessionRefused:  # the account is refused since: its end is said from Slurm's words alone
            tail = ""
        outcome = read_outcome(tail)
        entry = next((j for j in accounted if j.job_id == run["job_id"]), None)
        settings = run.get("settings") or {}
        limit = entry.limit if entry else ""
        started = bool(entry.start) if entry else True
        run.update(
            state=state,
            why=ended_why(
                state,
                entry.exit_code if entry else "",
                limit,
                run.get("kind") or settings.get("kind", ""),
                outcome,
                started,
            ),
            ended=now_text(),
        )
        log.info("Run %s of %s ended: %s", run["job_id"], name, run["why"])
        subject, body = run_ended_mail(
            run["job_id"],
            settings.get("path", ""),
            run["why"],
            run.get("output", "") if started else "",
            self.public_url(),
        )
        self._mail(spawner, user_record(spawner).notify_mail, subject, body, run)

    def _sweep_ended(self, spawner, run: dict, listed: list, accounted: list, submitted_ts: float) -> None:
        """A sweep has ended when every task has (one that no listing has ever shown: after GONE_AFTER); then
        one notice and one mail for the whole sweep, with its best result.  Its results are read in the
        background, at most READS_AT_ONCE sweeps at a time and one per user: a read that hangs (a FIFO the user
        planted as a results file holds `head` until its timeout) holds that user's sweeps alone, never the round
        of every user nor the other users' reads."""
        states = states_of(run, listed, accounted, self.services.settings.runs.list_seconds)
        if any(s.state in IN_QUEUE for s in states):
            return
        if any(s.state == "" for s in states) and time.time() - submitted_ts <= GONE_AFTER:
            return
        key = (spawner.user.name, run["job_id"])
        if not any(user == key[0] for user, _ in self._finishing):
            task = asyncio.ensure_future(self._finish_sweep(spawner, run, counts(states)))
            self._finishing[key] = task
            task.add_done_callback(lambda _: self._finishing.pop(key, None))

    async def _finish_sweep(self, spawner, run: dict, tally: dict[str, int]) -> None:
        summary = None
        async with self._reading:
            try:
                summary = await table(self.services, spawner, run, spawner.unix_account().home.rstrip("/"))
            except SessionRefused:
                pass
        if summary is None or summary["error"]:
            run["results_tries"] = run.get("results_tries", 0) + 1
            if run["results_tries"] < RESULTS_TRIES:
                return  # tried again at the next round
            state, words = ended_state(tally), counts_words(tally)[:-1] + "; its results could not be read."
        else:
            state, words = sweep_ended(summary, tally)
        run.update(state=state, why=words, ended=now_text())
        save_user_record(spawner)
        log.info("Sweep %s of %s ended: %s", run["job_id"], spawner.user.name, words)
        settings = run.get("settings") or {}
        subject, body = sweep_ended_mail(
            run["job_id"], settings.get("path", ""), tally, words, run.get("output", ""), self.public_url()
        )
        self._mail(spawner, user_record(spawner).notify_mail, subject, body, run)

    async def _time_left(self, spawner) -> None:
        """Mail once per session when its time limit is `notify.minutes_left` away (opted-in users only)."""
        record, notify = spawner.record, self.services.settings.notify
        if not (user_record(spawner).notify_mail and notify.smtp_host and spawner.job_id and record.start_done):
            return
        if record.warned_job == spawner.job_id:
            return
        left = seconds_left(spawner.slurm_client.watcher.last_known(spawner.job_id), datetime.now())
        if left is None or left > notify.minutes_left * 60:
            return
        record.warned_job = spawner.job_id
        spawner.save_state()
        info = spawner.slurm_client.watcher.last_known(spawner.job_id)
        subject, body = minutes_left_mail(spawner.job_id, max(1, round(left / 60)), info.end, self.public_url())
        self._mail(spawner, True, subject, body)

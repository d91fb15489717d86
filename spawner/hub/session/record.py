"""The session's saved record: what the hub's database keeps of a user's session (hub side, pure).

JupyterHub saves each spawner's state as a JSON object (`orm_spawner.state`)
and hands it back after a hub restart.  This is its one type.  Sessions are
Slurm jobs that outlive the hub, so a hub upgraded while sessions run must
read the records an older hub wrote: each record carries its `version`, and
`SessionRecord.from_state` migrates older ones.

Versions:
  0  (no "version" key) written by hubs before the record had a type: the same flat
     keys, some written only when set; batchspawner's own state (job_id, job_status) is one too.
  1  this one: the flat keys of version 0 and "version": 1.

What is the user's, not one session's (the history, the usage log, the runs, the mail choice), is the user's own
record since 0.2.0 (spawner/hub/session/userrecord.py).  A record an older hub wrote for a user's unnamed session
still holds them: they are kept here unread (`legacy_user`) and written back as they were, until the user's
record takes them over.
"""

from __future__ import annotations

import logging
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any

VERSION = 1
LEGACY_USER_KEYS = ("history", "runs", "usage_log", "notify_mail")  # the user's record's since 0.2.0

log = logging.getLogger("JupyterHub").getChild("record")


@dataclass
class SessionRecord:
    """What outlives the hub: the job, how far its start got, and why earlier sessions ended."""

    job_id: str = ""  # the Slurm job of the current session ("" for none)
    job_status: str = ""  # batchspawner's "STATE|REASON|NODE" of the last listing
    token_sha256: str = ""  # the session's API token's digest: JupyterHub gives a restarted hub no token
    token_id: int = 0  # its row in JupyterHub's token table: the one server token of the session kept (sessiontoken)
    token_undelivered: bool = False  # a new token (a share ended) has not reached the session yet
    # meanwhile: the digests of the tokens the session may hold (it took the first; each later one was handed over
    # unconfirmed), which key the offer's proofs (spawner/hub/sharing/handover.py)
    held_digests: list[str] = field(default_factory=list)
    start_done: bool = False  # start() returned: a job saved without it was abandoned by a dying hub
    stopping: bool = False  # a stop began: the job is the reconciler's until Slurm confirms it gone
    limit: str = ""  # the session's length in words ("8 h"), for the end's message
    minutes: int = 0  # the session's time limit in minutes, extensions included
    submitted: str = ""  # when the job was submitted (ISO, the hub's local time)
    started: str = ""  # when the hub first saw the job running (ISO, to the second): its GPU-hours count from then
    last_end: str = ""  # why the last session ended, when the user did not stop it; kept until the next start
    usage: dict = field(default_factory=dict)  # the session's last report of what it used (spawner/usage.py)
    # whom the session is shared with: {"kind": "user"|"group", "name", "expires": ISO UTC}; ends with the session
    shares: list[dict] = field(default_factory=list)
    warned_job: str = ""  # the session job whose "little time left" mail went out
    # an older hub's user-level keys, unread until the user's record takes them (spawner/hub/session/userrecord.py)
    legacy_user: dict = field(default_factory=dict)

    def to_state(self) -> dict:
        """The JSON object JupyterHub saves; {} for a user with nothing to remember."""
        if self == SessionRecord():
            return {}
        state: dict[str, Any] = {"version": VERSION}
        if self.job_id:
            state.update(
                job_id=self.job_id,
                job_status=self.job_status,
                token_sha256=self.token_sha256,
                start_done=self.start_done,
                limit=self.limit,
                minutes=self.minutes,
                submitted=self.submitted,
            )
            if self.started:
                state["started"] = self.started
            if self.stopping:
                state["stopping"] = True
            if self.token_id:
                state["token_id"] = self.token_id
            if self.token_undelivered:
                state["token_undelivered"] = True
            if self.held_digests:
                state["held_digests"] = list(self.held_digests)
            if self.usage:
                state["usage"] = dict(self.usage)
        if self.last_end:
            state["last_end"] = self.last_end
        if self.shares:
            state["shares"] = [dict(e) for e in self.shares]
        if self.warned_job:
            state["warned_job"] = self.warned_job
        state.update(self.legacy_user)  # as they were read
        return state

    @classmethod
    def from_state(cls, state: dict | None) -> SessionRecord:
        """A saved state of any version -> the record; what does not read is dropped, never raised.

        A hub must start whatever its database holds: a field of the wrong type
        is logged and left at its default (a job id is never dropped: without
        it the job would be nobody's and the reconciler would cancel it).
        """
        state = dict(state or {})
        version = state.pop("version", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            log.warning("A saved session record's version %r is no number: reading it as the oldest", version)
            version = 0
        if isinstance(state.get("job_id"), int) and not isinstance(state["job_id"], bool):
            state["job_id"] = str(state["job_id"])  # whatever the version: a job id is never dropped
        if version not in MIGRATIONS and version != VERSION:
            log.warning(
                "A saved session record of version %r is newer than this hub's (%s): reading what it can",
                version,
                VERSION,
            )
        while version in MIGRATIONS:
            state, version = MIGRATIONS[version](state), version + 1
        legacy = {name: state.pop(name) for name in LEGACY_USER_KEYS if name in state}
        values: dict[str, Any] = {**typed_fields(cls, state, "session record"), "legacy_user": legacy}
        values["shares"] = [
            e for e in values.get("shares", []) if isinstance(e, dict) and isinstance(e.get("name"), str)
        ]
        values["held_digests"] = [d for d in values.get("held_digests", []) if isinstance(d, str)]
        return cls(**values)


def typed_fields(cls, state: dict, what: str) -> dict[str, Any]:
    """The values of `state` that are fields of the dataclass `cls` of their default's type; a later version's key
    is passed over, a value of another type logged and left out (its default stays)."""
    known = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for name, value in state.items():
        if name not in known:
            continue  # a later version's field: this hub does not use it
        default = known[name].default if known[name].default_factory is MISSING else known[name].default_factory()
        kind = type(default)
        if kind is int and isinstance(value, bool) or not isinstance(value, kind):
            log.warning("Saved %s: %s=%r is not a %s; left at %r", what, name, value, kind.__name__, default)
            continue
        values[name] = value
    return values


def _from_version_0(state: dict) -> dict:
    """Version 0 -> 1: the same keys; minutes saved as text and flags saved as numbers are read as meant."""
    state = dict(state)
    if isinstance(state.get("minutes"), str) and state["minutes"].isdigit():
        state["minutes"] = int(state["minutes"])
    for flag in ("start_done", "stopping"):
        if flag in state:
            state[flag] = bool(state[flag])
    return state


MIGRATIONS = {0: _from_version_0}  # version N -> N + 1


def history_entry(job_id: str, summary: str, options: dict, submitted: str, ended: datetime, why: str) -> dict:
    return {
        "job_id": job_id,
        "summary": summary,
        "options": options,
        "submitted": submitted,
        "ended": ended.isoformat(timespec="minutes"),
        "why": why,
    }


def add_to_history(history: list[dict], entry: dict, keep: int) -> list[dict]:
    """Newest first, at most `keep`, one entry per job."""
    rest = [e for e in history if e.get("job_id") != entry["job_id"]]
    return ([entry] + rest)[:keep]

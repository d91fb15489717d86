"""What a soak records while it runs, and what its checks find (pure data, shared by every part of the soak).

Times are seconds since the epoch (`time.time()`): the hub's history says when
a session ended in wall-clock minutes, and the checks compare the two.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

# the Slurm states in which a job holds, or waits for, a node's resources (what the admin's limits count)
HOLDING = frozenset({"PENDING", "CONFIGURING", "RUNNING", "SUSPENDED"})


@dataclass(frozen=True)
class Call:
    """One request a simulated user made, and how it was answered."""

    user: str
    op: str  # start, stop, extend, share, revoke, job, cancel, look, login
    method: str
    path: str
    started: float
    ended: float
    status: int  # 0: no answer (refused connection, reset, timeout)
    message: str = ""  # the answer's words: the JSON "message", or the login page's error
    error: str = ""  # why there was no answer

    @property
    def refused(self) -> bool:
        return self.status == 0 or self.status >= 400


@dataclass(frozen=True)
class FaultWindow:
    """An injected fault: from the moment it began until the daemon answered again."""

    kind: str  # "hub restart", "proxy restart", "slurmctld stopped", "slapd stopped", "slurmd killed"
    target: str  # the supervisord program
    started: float
    restored: float
    problem: str = ""  # why the daemon did not come back by itself ("" when it did)


@dataclass(frozen=True)
class SlurmJob:
    """A job of a soak user as squeue lists it (the soak's users never rename their jobs)."""

    job_id: str
    user: str
    state: str  # squeue's long state: PENDING, RUNNING, COMPLETING ...
    gpus: int  # on each node
    name: str

    @property
    def holding(self) -> bool:
        return self.state in HOLDING


@dataclass(frozen=True)
class HubServer:
    """One session of a user as the hub's admin API shows it (`state` is the spawner's saved record)."""

    user: str
    server: str
    job_id: str  # "" when it holds no job
    stopping: bool  # handed to the reconciler: stopped for the hub, Slurm has not confirmed the job gone
    ready: bool

    @property
    def running(self) -> bool:
        return bool(self.job_id) and not self.stopping


@dataclass(frozen=True)
class HubView:
    """What the hub holds: its sessions and the job ids of its users' runs."""

    servers: tuple[HubServer, ...]
    runs: frozenset[str]

    @property
    def owned(self) -> frozenset[str]:
        """Every job id the hub answers for (a stopping session's job too: the reconciler's to cancel)."""
        return frozenset(s.job_id for s in self.servers if s.job_id) | self.runs


@dataclass(frozen=True)
class Sample:
    """Slurm's and the hub's view at one moment; `hub` is None when the hub did not answer, `jobs` None when
    slurmctld did not."""

    at: float
    jobs: tuple[SlurmJob, ...] | None
    hub: HubView | None

    @property
    def holding(self) -> list[SlurmJob]:
        return [j for j in self.jobs or () if j.holding]


@dataclass(frozen=True)
class Harvest:
    """A session's API token, read as root from its processes' environment while the session ran."""

    token: str
    user: str
    server: str
    job_id: str
    seen: float


@dataclass(frozen=True)
class Ended:
    """A session's job the hub held and then no longer did: the session ended."""

    user: str
    server: str
    job_id: str
    at: float


@dataclass(frozen=True)
class Snapshot:
    """The user's history as GET /hub/api/dsportal/session showed it: (job id, when it ended) newest first."""

    user: str
    at: float
    entries: tuple[tuple[str, float | None], ...]


@dataclass(frozen=True)
class Revocation:
    """The owner stopped sharing `server` (job `job_id`) with `guest`; the DELETE was answered at `at`."""

    user: str
    server: str
    guest: str
    job_id: str
    at: float


@dataclass(frozen=True)
class Probe:
    """A harvested token tried on GET /hub/api/user after its session ended or its share was revoked."""

    why: str  # "ended session" or "revoked share"
    user: str
    server: str
    job_id: str
    after: float  # the end or the revocation
    at: float  # when it was last tried
    status: int  # 200: the token still works


@dataclass(frozen=True)
class Attack:
    """One round of one of the hostile user's attacks (tests/soak/hostile.py), and how the portal answered it."""

    kind: str  # "reads", "forged log", "offers"
    target: str  # the file read, the session flooded ...
    started: float
    ended: float
    statuses: tuple[tuple[int, int], ...]  # (HTTP status, how many), 0: no answer
    wordless: int = 0  # refusals of the hub's without a message (the session's offers are not the hub's)
    error: str = ""  # why the round did not run (the soak's own problem)

    @property
    def count(self) -> int:
        return sum(n for _, n in self.statuses)


@dataclass(frozen=True)
class HubMemory:
    """The hub's process (the one listening on its API port) and its resident memory, in bytes, at a moment."""

    at: float
    pid: int
    rss: int


@dataclass(frozen=True)
class Violation:
    kind: str
    text: str


@dataclass
class Ledger:
    """Everything the soak's threads record, each list appended under one lock."""

    calls: list[Call] = field(default_factory=list)
    faults: list[FaultWindow] = field(default_factory=list)
    pids: list[tuple[float, dict[str, int | None]]] = field(default_factory=list)  # the daemons' (None: down)
    samples: list[Sample] = field(default_factory=list)
    harvests: dict[tuple[str, str], Harvest] = field(default_factory=dict)  # (token, job id) -> first seen
    ended: list[Ended] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    revocations: list[Revocation] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    attacks: list[Attack] = field(default_factory=list)  # the hostile user's rounds
    memory: list[HubMemory] = field(default_factory=list)  # the hub's, at every sample
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, kind: str, item) -> None:
        with self.lock:
            getattr(self, kind).append(item)

    def harvested(self, item: Harvest) -> bool:
        """Keep a token the first time it is seen for its job; True if it is new."""
        with self.lock:
            key = (item.token, item.job_id)
            if key in self.harvests:
                return False
            self.harvests[key] = item
            return True

    def tokens_of(self, job_id: str, seen_by: float) -> list[Harvest]:
        with self.lock:
            return [h for h in self.harvests.values() if h.job_id == job_id and h.seen <= seen_by]

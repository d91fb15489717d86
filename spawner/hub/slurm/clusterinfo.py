"""What is free on the cluster: GPUs, cores and memory per partition, from one shared `sinfo`.

Runs in the hub.  One cached query (at most one per `slurm.cluster_info_seconds`)
serves every user looking at the form or the REST API, so the number of
Slurm calls does not grow with the number of users.  sinfo is run by the
hub's Slurm client (spawner/hub/slurm/client.py) and read by the vocabulary's parser
(spawner/slurmvocab.py); the arithmetic here is pure and tested by equality.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import asdict, dataclass
from typing import Any

from portal.settings import SlurmSettings, size_to_mib

from ...slurmgres import GPU_TYPE
from ...slurmvocab import NodeState
from ..request.resources import allocation
from .client import SlurmClient


@dataclass(frozen=True)
class TypeAvailability:
    """One GPU type of a partition: what is free of it, and the largest session of it that starts now."""

    gpu_type: str  # Slurm's name (gres.conf Type=)
    label: str  # the admin's label, else the name
    gpus_free: int
    gpus_total: int
    largest_block: int
    memory_gb: float | None = None  # one GPU's memory, the admin's (slurm.gpu_memory): a MIG slice's is its own

    def words(self) -> str:
        """'A100 80 GB: 3 of 4 free, largest block 3'; with the admin's memory 'A100 slice (10 GB GPU memory): ...'."""
        memory = f" ({self.memory_gb:g} GB GPU memory)" if self.memory_gb else ""
        return f"{self.label}{memory}: {self.gpus_free} of {self.gpus_total} free, largest block {self.largest_block}"


@dataclass(frozen=True)
class PartitionAvailability:
    partition: str
    gpus_free: int
    gpus_total: int
    largest_block: int  # most GPUs one session can get on one node right now (cores and memory included)
    nodes_up: int
    nodes: int
    types: tuple[TypeAvailability, ...] = ()  # the GPU types users may ask for by name (hidden ones left out)
    cores_free: int = 0
    cores_total: int = 0
    shards_free: int = 0  # shares of a GPU (gres/shard), where the portal offers them (slurm.shards.per_gpu)
    shards_total: int = 0
    largest_shards: int = 0  # most shares one session can get on one node now (below a whole GPU's)
    shard_label: str = ""  # the shared GPUs' label when they are of one type

    def line(self) -> str:
        """'sxm2: 5 of 8 GPUs free, largest free block 4 on one node'; 'cpu: CPU only, 36 of 40 cores free'."""
        if self.nodes_up == 0:
            return f"{self.partition}: no node is taking jobs"
        if self.gpus_total == 0:
            return f"{self.partition}: CPU only, {self.cores_free} of {self.cores_total} cores free"
        shares = f", {self.shards_free} of {self.shards_total} shares of a GPU free" if self.shards_total else ""
        return (
            f"{self.partition}: {self.gpus_free} of {self.gpus_total} GPUs free, "
            f"largest free block {self.largest_block} on one node{shares}"
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.line(), "types_summary": " · ".join(t.words() for t in self.types)}


def free_gpus(node: NodeState, gpu_type: str = "") -> int:
    """GPUs of `gpu_type` ("" = any) not in use on `node`: a GPU jobs hold shards of is in use as a whole."""
    sharded_only = len(set(node.gpus_sharded) - set(node.gpus_held))
    free = max(node.gpus - node.gpus_used - sharded_only, 0)
    if not gpu_type:
        return free
    # at most what is free of every type: a use Slurm printed without its type is use all the same
    return min(free, sum(max(total - used, 0) for kind, total, used in node.gpu_types if kind == gpu_type))


def session_fits(node: NodeState, gpus: int, slurm: SlurmSettings, gpu_type: str = "", shards: int = 0) -> bool:
    """A session of `gpus` GPUs (of `gpu_type`, "" = any), or of `shards` shares of a GPU, with its cores and
    memory, could start on `node` now."""
    if not node.usable:
        return False
    cpus, memory = allocation(gpus, slurm, shards)
    return (
        free_gpus(node, gpu_type) >= gpus
        and shard_block(node) >= shards
        and node.cpus_idle >= cpus
        and node.memory_mib - node.memory_used_mib >= memory
    )


def free_shards(node: NodeState) -> int:
    """Shards free on `node`: those of the GPUs no job holds whole (Slurm keeps a GPU whole or in shards)."""
    if not (node.shards and node.gpus):
        return 0
    held = set(node.gpus_held)
    if node.shards_free_per_gpu:  # Slurm 23.11 on: each GPU's own count
        return sum(free for i, free in enumerate(node.shards_free_per_gpu) if i not in held)
    per_gpu = node.shards // node.gpus
    return max(0, (node.gpus - max(node.gpus_used, len(held))) * per_gpu - node.shards_used)


def shard_block(node: NodeState) -> int:
    """The most shards one job gets on `node` now: Slurm takes a job's shards from one GPU.  Where sinfo gives each
    GPU's count (Slurm 23.11 on), the most free on one GPU not held whole; else a GPU no job holds whole or in
    shards gives all of its own, and otherwise what is free of the sharded GPUs, spread evenly, rounded up (Slurm
    22.05 counts the shards held on one GPU short: sinfo says no more)."""
    if not (node.shards and node.gpus):
        return 0
    per_gpu = node.shards // node.gpus
    held = set(node.gpus_held)
    if node.shards_free_per_gpu:
        return max((free for i, free in enumerate(node.shards_free_per_gpu) if i not in held), default=0)
    untouched = node.gpus - len(held | set(node.gpus_sharded)) - max(0, node.gpus_used - len(held))
    if untouched > 0:
        return per_gpu
    sharded = len(set(node.gpus_sharded) - held)
    return min(per_gpu, -(-free_shards(node) // sharded)) if sharded else 0


def nodes_facts(nodes: list[NodeState]) -> dict:
    """What a session's options are checked against of sinfo's answer (SlurmFacts' fields, spawner/hub/request/
    options.py): each partition's GPU types, the most GPUs of each on one node, the most shards on one node."""
    return {
        "gpu_types": partition_gpu_types(nodes),
        "most": partition_type_most(nodes),
        "shards": partition_shards(nodes),
    }


def partition_type_most(nodes: list[NodeState]) -> dict[str, dict[str, int]]:
    """{partition: {GPU type: the most GPUs of it on one of its nodes}}: a session's GPUs are one node's."""
    most: dict[str, dict[str, int]] = {}
    for node in nodes:
        mine = most.setdefault(node.partition, {})
        for kind, count, _ in node.gpu_types:
            if GPU_TYPE.fullmatch(kind):
                mine[kind] = max(mine.get(kind, 0), count)
    return most


def partition_shards(nodes: list[NodeState]) -> dict[str, int]:
    """{partition: the most shards one of its nodes has} (0 for a partition without shares of a GPU)."""
    most: dict[str, int] = {}
    for node in nodes:
        most[node.partition] = max(most.get(node.partition, 0), node.shards)
    return most


def shares_offered(nodes: list[NodeState], partition: str, slurm: SlurmSettings) -> int:
    """The shares a GPU is cut into where the portal offers them on `partition` (its nodes have shards), else 0."""
    return slurm.shards.per_gpu if partition_shards(nodes).get(partition) else 0


def shard_gpu_label(nodes: list[NodeState], partition: str, slurm: SlurmSettings) -> str:
    """The label of the GPUs a partition shares in shards when they are of one type ('A100 80 GB'), else ""."""
    kinds = {k for n in nodes if n.partition == partition and n.shards for k, _, _ in n.gpu_types}
    return slurm.gpu_label(kinds.pop()) if len(kinds) == 1 and "" not in kinds else ""


def partition_gpu_types(nodes: list[NodeState]) -> dict[str, set[str]]:
    """{partition: the GPU types its nodes have} (untyped GPUs are no type)."""
    types: dict[str, set[str]] = {}
    for node in nodes:
        types.setdefault(node.partition, set()).update(k for k, _, _ in node.gpu_types if GPU_TYPE.fullmatch(k))
    return types


def _types(mine: list[NodeState], up: list[NodeState], slurm: SlurmSettings) -> tuple[TypeAvailability, ...]:
    named = {kind for n in mine for kind, _, _ in n.gpu_types if GPU_TYPE.fullmatch(kind)}  # a session may ask for
    names = sorted(named - set(slurm.hidden_gpu_types))
    return tuple(
        TypeAvailability(
            gpu_type=kind,
            label=slurm.gpu_label(kind),
            gpus_free=sum(free_gpus(n, kind) for n in up),
            gpus_total=sum(total for n in mine for k, total, _ in n.gpu_types if k == kind),
            largest_block=max(
                (g for n in up for g in range(1, free_gpus(n, kind) + 1) if session_fits(n, g, slurm, kind)), default=0
            ),
            memory_gb=round(size_to_mib(slurm.gpu_memory[kind]) / 1024, 1) if kind in slurm.gpu_memory else None,
        )
        for kind in names
    )


def availability(nodes: list[NodeState], slurm: SlurmSettings) -> dict[str, PartitionAvailability]:
    """Per configured partition: GPUs free and in total, and the largest session that starts now."""
    result = {}
    for partition in slurm.partitions:
        mine = [n for n in nodes if n.partition == partition.name]
        up = [n for n in mine if n.usable]
        largest = max((g for n in up for g in range(0, n.gpus + 1) if session_fits(n, g, slurm) and g > 0), default=0)
        result[partition.name] = PartitionAvailability(
            partition=partition.name,
            gpus_free=sum(free_gpus(n) for n in up),
            gpus_total=sum(n.gpus for n in mine),
            largest_block=largest,
            nodes_up=len(up),
            nodes=len(mine),
            types=_types(mine, up, slurm),
            cores_free=sum(n.cpus_idle for n in up),
            cores_total=sum(n.cpus for n in mine),
            **(_shares(mine, up, slurm) if partition.max_gpus else {}),  # no share where the admin offers no GPU
        )
    return result


def _shares(mine: list[NodeState], up: list[NodeState], slurm: SlurmSettings) -> dict:
    """A partition's shares of a GPU, where the portal offers them: free, in all, the most one session gets now."""
    per_gpu = slurm.shards.per_gpu
    if not per_gpu or not any(n.shards for n in mine):
        return {}
    return {
        "shards_free": sum(free_shards(n) for n in up),
        "shards_total": sum(n.shards for n in mine),
        "largest_shards": max(
            (k for n in up for k in range(1, min(per_gpu, shard_block(n) + 1)) if session_fits(n, 0, slurm, "", k)),
            default=0,
        ),
        "shard_label": shard_gpu_label(mine, mine[0].partition, slurm),
    }


def starts_now(
    nodes: list[NodeState], partition: str, gpus: int, slurm: SlurmSettings, gpu_type: str = "", shards: int = 0
) -> bool:
    return any(session_fits(n, gpus, slurm, gpu_type, shards) for n in nodes if n.partition == partition)


class SharedAnswers:
    """Answers to one question per key, reused for `max_age` seconds; callers of the same moment share one call."""

    def __init__(self, max_age: float, max_keys: int = 10000):
        self.max_age = max_age
        self.max_keys = max_keys  # keys are few (partitions, shapes); never let the cache grow without end
        self._answers: dict[Hashable, tuple[float, Any]] = {}
        self._inflight: dict[Hashable, asyncio.Future] = {}
        self.calls = 0  # questions really asked; read by tests and the benchmark

    def fresh(self, key: Hashable) -> bool:
        """An answer for `key` is at hand (cached, or being asked): get() costs no new question."""
        cached = self._answers.get(key)
        return bool(cached and time.monotonic() - cached[0] <= self.max_age) or (
            key in self._inflight and not self._inflight[key].done()
        )

    def cached(self, key: Hashable, any_age: bool = False) -> Any:
        """The answer for `key` if it is fresh (`any_age`: the latest, however old), else None: no question asked."""
        cached = self._answers.get(key)
        return cached[1] if cached and (any_age or time.monotonic() - cached[0] <= self.max_age) else None

    async def get(
        self, key: Hashable, ask: Callable[[], Awaitable[Any]], wait: float | None = None, max_age: float | None = None
    ) -> Any:
        """The answer for `key`, asked afresh when it is older than max_age (or the caller's shorter `max_age`).
        `wait`: when an older answer is at hand, wait at most this long for the new one, then give the older (the
        question goes on for the next caller): a busy Slurm then slows no page that can show what it showed a
        moment ago."""
        cached = self._answers.get(key)
        limit = self.max_age if max_age is None else min(max_age, self.max_age)
        if cached and time.monotonic() - cached[0] <= limit:
            return cached[1]
        if key not in self._inflight or self._inflight[key].done():
            self._inflight[key] = asyncio.ensure_future(self._ask(key, ask))
            # a question whose callers all took the older answer fails unheard: its error is read here, not
            # logged as "never retrieved" (the next caller asks again)
            self._inflight[key].add_done_callback(lambda f: f.cancelled() or f.exception())
        # shield: one caller giving up must not cancel the others' answer
        if cached is None or wait is None:
            return await asyncio.shield(self._inflight[key])
        try:
            return await asyncio.wait_for(asyncio.shield(self._inflight[key]), wait)
        except TimeoutError:
            return cached[1]

    async def _ask(self, key: Hashable, ask: Callable[[], Awaitable[Any]]) -> Any:
        self.calls += 1
        try:
            answer = await ask()
        finally:
            self._inflight.pop(key, None)
        if len(self._answers) >= self.max_keys:
            self._answers.clear()
        self._answers[key] = (time.monotonic(), answer)
        return answer


class ClusterInfo:
    """The latest sinfo, shared: callers within `max_age` seconds of it get it without a new call."""

    def __init__(self, client: SlurmClient, max_age: float):
        self.client = client
        self.slurm = client.slurm
        self._shared = SharedAnswers(max_age)

    @property
    def calls(self) -> int:  # sinfo calls made; read by the benchmark
        return self._shared.calls

    async def nodes(self) -> list[NodeState]:
        return await self._shared.get("nodes", self.client.nodes)

    def latest_nodes(self) -> list[NodeState]:
        """The latest sinfo answer, however old ([] before the first): for what a page shows, never a new call."""
        return self._shared.cached("nodes", any_age=True) or []

    async def availability(self) -> dict[str, PartitionAvailability]:
        return availability(await self.nodes(), self.slurm)

"""What is free on the cluster: GPUs, cores and memory per partition, from one shared `sinfo`.

Runs in the hub.  One cached query (at most one per `slurm.cluster_info_seconds`)
serves every user looking at the form or the REST API, so the number of
Slurm calls does not grow with the number of users.  The parsers and the
arithmetic are pure and tested by equality.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import asdict, dataclass
from typing import Any, Awaitable, Callable, Hashable

from portal.settings import SlurmSettings, size_to_mib

from .slurm import SlurmError, UnreadableAnswer, run, run_both

SINFO_FIELDS = ("NodeList", "Partition", "StateCompact", "Gres", "GresUsed", "CPUsState", "AllocMem", "Memory")
# States in which a node takes new jobs (a trailing * means "not responding"; drain, down ... do not)
USABLE_STATES = frozenset({"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing"})
_GPU_COUNT = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:([0-9]+)")


@dataclass(frozen=True)
class NodeState:
    node: str
    partition: str
    state: str
    gpus: int
    gpus_used: int
    cpus_idle: int
    cpus: int
    memory_mib: int
    memory_used_mib: int

    @property
    def usable(self) -> bool:
        # a suffix (* not responding, ~ powered off, @ reboot pending, $ maintenance ...) means no; "-" (planned) is fine
        return self.state.rstrip("-") in USABLE_STATES


@dataclass(frozen=True)
class PartitionAvailability:
    partition: str
    gpus_free: int
    gpus_total: int
    largest_block: int  # most GPUs one session can get on one node right now (cores and memory included)
    nodes_up: int
    nodes: int

    def line(self) -> str:
        """'sxm2: 5 of 8 GPUs free, largest free block 4 on one node'."""
        if self.nodes_up == 0:
            return f"{self.partition}: no node is taking jobs"
        return (f"{self.partition}: {self.gpus_free} of {self.gpus_total} GPUs free, "
                f"largest free block {self.largest_block} on one node")

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.line()}


def sinfo_argv(slurm: SlurmSettings) -> list[str]:
    return [slurm.sinfo, "--noheader", "--Node", "--Format=" + ",".join(f"{f}:|" for f in SINFO_FIELDS)]


def gpu_count(gres: str) -> int:
    """'gpu:4', 'gpu:v100:4(S:0-1)', 'gpu:1(IDX:0),mps:100' -> GPUs; '(null)' -> 0."""
    return sum(int(n) for n in _GPU_COUNT.findall(gres))


def parse_sinfo(output: str) -> list[NodeState]:
    nodes = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.rstrip().rstrip("|").split("|")]
        if len(parts) != len(SINFO_FIELDS):
            raise UnreadableAnswer(f"unreadable sinfo line: {line[:200]!r}")
        node, partition, state, gres, used, cpus, alloc_mem, memory = parts
        try:
            allocated, idle, _other, total = (int(n) for n in cpus.split("/"))
            nodes.append(NodeState(node=node, partition=partition.rstrip("*"), state=state, gpus=gpu_count(gres),
                                   gpus_used=gpu_count(used), cpus_idle=idle, cpus=total,
                                   memory_mib=int(memory), memory_used_mib=int(alloc_mem)))
        except ValueError:
            raise UnreadableAnswer(f"unreadable sinfo line: {line[:200]!r}") from None
    return nodes


def session_fits(node: NodeState, gpus: int, slurm: SlurmSettings) -> bool:
    """A session of `gpus` GPUs (with its cores and memory) could start on `node` now."""
    if not node.usable:
        return False
    cpus = gpus * slurm.cores_per_gpu if gpus else slurm.cpu_only_cores
    memory = gpus * size_to_mib(slurm.memory_per_gpu) if gpus else size_to_mib(slurm.cpu_only_memory)
    return (node.gpus - node.gpus_used >= gpus and node.cpus_idle >= cpus
            and node.memory_mib - node.memory_used_mib >= memory)


def availability(nodes: list[NodeState], slurm: SlurmSettings) -> dict[str, PartitionAvailability]:
    """Per configured partition: GPUs free and in total, and the largest session that starts now."""
    result = {}
    for partition in slurm.partitions:
        mine = [n for n in nodes if n.partition == partition.name]
        up = [n for n in mine if n.usable]
        largest = max((g for n in up for g in range(0, n.gpus + 1) if session_fits(n, g, slurm) and g > 0),
                       default=0)
        result[partition.name] = PartitionAvailability(
            partition=partition.name,
            gpus_free=sum(max(n.gpus - n.gpus_used, 0) for n in up),
            gpus_total=sum(n.gpus for n in mine),
            largest_block=largest,
            nodes_up=len(up),
            nodes=len(mine),
        )
    return result


def starts_now(nodes: list[NodeState], partition: str, gpus: int, slurm: SlurmSettings) -> bool:
    return any(session_fits(n, gpus, slurm) for n in nodes if n.partition == partition)


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
            key in self._inflight and not self._inflight[key].done())

    async def get(self, key: Hashable, ask: Callable[[], Awaitable[Any]]) -> Any:
        cached = self._answers.get(key)
        if cached and time.monotonic() - cached[0] <= self.max_age:
            return cached[1]
        if key not in self._inflight or self._inflight[key].done():
            self._inflight[key] = asyncio.ensure_future(self._ask(key, ask))
        # shield: one caller giving up must not cancel the others' answer
        return await asyncio.shield(self._inflight[key])

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

    def __init__(self, slurm: SlurmSettings, max_age: float):
        self.slurm = slurm
        self._shared = SharedAnswers(max_age)

    @property
    def calls(self) -> int:  # sinfo calls made; read by the benchmark
        return self._shared.calls

    async def nodes(self) -> list[NodeState]:
        return await self._shared.get("nodes", self._sinfo)

    async def _sinfo(self) -> list[NodeState]:
        argv = sinfo_argv(self.slurm)
        out = await run(argv, timeout=self.slurm.command_timeout)
        try:
            return parse_sinfo(out)
        except UnreadableAnswer as e:
            raise SlurmError(argv, 0, out[-500:], str(e)) from None

    async def availability(self) -> dict[str, PartitionAvailability]:
        return availability(await self.nodes(), self.slurm)


_TEST_ONLY = re.compile(r"Job [0-9]+ to start at ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})")


def parse_test_only(stderr: str) -> str | None:
    """`sbatch --test-only` -> Slurm's expected start ('2026-11-22T11:00:00'), None if it gave none."""
    found = _TEST_ONLY.search(stderr)
    return found.group(1) if found else None


async def test_only_start(argv: list[str], script: str, timeout: float) -> str | None:
    """Run `sbatch ... --test-only` (nothing is queued); Slurm's expected start, from its stderr."""
    _, err = await run_both(argv, input=script, timeout=timeout)
    return parse_test_only(err)

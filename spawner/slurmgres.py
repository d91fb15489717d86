"""Slurm's GRES strings as sinfo and squeue print them: GPUs in all, and GPUs by type (standard library only).

A typed cluster declares `Gres=gpu:a100:4` (gres.conf `Type=a100`); sinfo
prints `gpu:a100:4(S:0-1)` for a node and `gpu:a100:2(IDX:0-1)` for what is
in use; an untyped one `gpu:4`.  A node may carry several types
(`gpu:v100:2,gpu:a100:2`).  Type names are what the admin wrote in
gres.conf: letters, digits and `_.-`.

A GPU cut into shares (Slurm's `gres/shard`, gres.conf `Name=shard Count=4
File=/dev/nvidia0` for each GPU) shows as `shard:16(S:0-1)` beside the GPUs,
and `shard:3(IDX:...)` or `shard:0` in use; Slurm counts shards apart from
GPUs (a GPU whose shards are taken is still free as a whole GPU to Slurm's
count, and the other way round).
"""

from __future__ import annotations

import re

GPU_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")  # a type name as a session may ask for it
_GPUS = re.compile(r"(?:^|,)gpu(?::([^:,(]+))?:([0-9]+)")
_SHARDS = re.compile(r"(?:^|,)shard(?::[^:,(]+)?:([0-9]+)")
_USED_AT = re.compile(r"(?:^|,)(gpu|shard)(?::[^:,(]+)?:[0-9]+\(IDX:([^)]*)\)")


def gpu_count(gres: str) -> int:
    """'gpu:4', 'gpu:v100:4(S:0-1)', 'gpu:1(IDX:0),mps:100' -> GPUs; '(null)' -> 0."""
    return sum(gpus_by_type(gres).values())


def gpus_by_type(gres: str) -> dict[str, int]:
    """'gpu:v100:2(S:0),gpu:a100:2(S:1)' -> {'v100': 2, 'a100': 2}; 'gpu:4' -> {'': 4}; '(null)' -> {}."""
    found: dict[str, int] = {}
    for kind, count in _GPUS.findall(gres):
        found[kind] = found.get(kind, 0) + int(count)
    return found


def gpu_types(gres: str, used: str) -> tuple[tuple[str, int, int], ...]:
    """A node's GPUs by type, from sinfo's Gres and GresUsed: (type, GPUs, in use), in gres.conf's order."""
    busy = gpus_by_type(used)
    return tuple((kind, count, busy.get(kind, 0)) for kind, count in gpus_by_type(gres).items())


def shard_count(gres: str) -> int:
    """'gpu:a100:4(S:0-1),shard:16(S:0-1)' -> 16 shards; 'shard:a100:3(IDX:0)' -> 3; 'gpu:4' -> 0."""
    return sum(int(count) for count in _SHARDS.findall(gres))


def indices_used(used: str, name: str) -> tuple[int, ...]:
    """The GPUs (by index on the node) that sinfo's GresUsed says `name` ('gpu' or 'shard') holds:
    'gpu:a100:4(IDX:0-3),shard:a100:0(IDX:N/A)' -> gpu (0, 1, 2, 3), shard (); 'shard:a100:5(IDX:0,2)' -> (0, 2).
    Slurm keeps a GPU either whole or in shards, never both: a shard's GPU is no free GPU, a whole one no shard's."""
    found: set[int] = set()
    for kind, where in _USED_AT.findall(used):
        if kind != name:
            continue
        for part in where.split(","):
            first, _, last = part.partition("-")
            if first.isdigit() and (not last or last.isdigit()):
                found.update(range(int(first), int(last or first) + 1))
    return tuple(sorted(found))


def gres_facts(gres: str, used: str) -> dict:
    """A node's GPUs and shards from sinfo's Gres and GresUsed, as NodeState's fields (spawner/slurmvocab.py)."""
    return {
        "gpus": gpu_count(gres),
        "gpus_used": gpu_count(used),
        "gpu_types": gpu_types(gres, used),
        "shards": shard_count(gres),
        "shards_used": shard_count(used),
        "gpus_held": indices_used(used, "gpu"),
        "gpus_sharded": indices_used(used, "shard"),
    }


def share_words(shards: int, per_gpu: int) -> str:
    """How the pages name shares of a GPU: 'a quarter of a GPU', 'half a GPU', '3 eighths of a GPU'."""
    whole = per_gpu or shards
    if 2 * shards == whole:
        return "half a GPU"
    names = {3: "third", 4: "quarter", 8: "eighth"}
    if whole in names:
        name = names[whole]
        article = "an" if name[0] in "aeiou" else "a"
        return f"{article} {name} of a GPU" if shards == 1 else f"{shards} {name}s of a GPU"
    return f"{shards}/{whole} of a GPU"

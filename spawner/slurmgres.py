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
# a type is a name, or "(null)" where untyped GPUs have device files (Slurm up to 25.11 prints 'gpu:(null):4(IDX:0-3)')
_TYPE = r"(?::(\(null\)|[^:,(]+))?"
_GPUS = re.compile(rf"(?:^|,)gpu{_TYPE}:([0-9]+)")
_SHARDS = re.compile(rf"(?:^|,)shard{_TYPE}:([0-9]+)")
# what a GRES in use holds: 'IDX:0-3' (GPUs by index), or since Slurm 23.11 a shard's 'used/total' per GPU in order
_USED_AT = re.compile(rf"(?:^|,)(gpu|shard){_TYPE}:[0-9]+\(([^)]*)\)")
_PER_GPU = re.compile(r"([0-9]+|-)/([0-9]+)")
_NUMBER = re.compile(r"[0-9]{1,4}")  # ASCII digits (str.isdigit() takes '²', which int() does not); a node's GPUs


def gpu_count(gres: str) -> int:
    """'gpu:4', 'gpu:v100:4(S:0-1)', 'gpu:1(IDX:0),mps:100' -> GPUs; '(null)' -> 0."""
    return sum(gpus_by_type(gres).values())


def gpus_by_type(gres: str) -> dict[str, int]:
    """'gpu:v100:2(S:0),gpu:a100:2(S:1)' -> {'v100': 2, 'a100': 2}; 'gpu:4' -> {'': 4}; '(null)' -> {}."""
    found: dict[str, int] = {}
    for kind, count in _GPUS.findall(gres):
        kind = "" if kind == "(null)" else kind
        found[kind] = found.get(kind, 0) + int(count)
    return found


def gpu_types(gres: str, used: str) -> tuple[tuple[str, int, int], ...]:
    """A node's GPUs by type, from sinfo's Gres and GresUsed: (type, GPUs, in use), in gres.conf's order."""
    busy = gpus_by_type(used)
    return tuple((kind, count, busy.get(kind, 0)) for kind, count in gpus_by_type(gres).items())


def shard_count(gres: str) -> int:
    """'gpu:a100:4(S:0-1),shard:16(S:0-1)' -> 16 shards; 'shard:a100:3(IDX:0)' -> 3; 'gpu:4' -> 0."""
    return sum(int(count) for _, count in _SHARDS.findall(gres))


def indices_used(used: str, name: str) -> tuple[int, ...]:
    """The GPUs (by index on the node) that sinfo's GresUsed says `name` ('gpu' or 'shard') holds:
    'gpu:a100:4(IDX:0-3),shard:a100:0(IDX:N/A)' -> gpu (0, 1, 2, 3), shard (); 'shard:a100:5(IDX:0,2)' -> (0, 2);
    since Slurm 23.11 'shard:a100:3(2/4,1/4,0/4,0/4)' -> shard (0, 1).  Slurm keeps a GPU either whole or in
    shards, never both: a shard's GPU is no free GPU, a whole one no shard's."""
    found: set[int] = set()
    for kind, _, where in _USED_AT.findall(used):
        if kind != name:
            continue
        if where.startswith("IDX:"):
            for part in where[4:].split(","):
                first, _, last = part.partition("-")
                if _NUMBER.fullmatch(first) and (not last or _NUMBER.fullmatch(last)):
                    found.update(range(int(first), min(int(last or first), 4095) + 1))
        else:
            found.update(i for i, (held, _) in enumerate(_PER_GPU.findall(where)) if held not in ("-", "0"))
    return tuple(sorted(found))


def shards_free_per_gpu(used: str) -> tuple[int, ...]:
    """Since Slurm 23.11, each GPU's shards free, in order ('shard:a100:3(2/4,1/4,0/4,0/4)' -> (2, 3, 4, 4); '-/4':
    none, the GPU is held whole); () where sinfo does not say (Slurm 22.05 and 23.02 print IDX only)."""
    for kind, _, where in _USED_AT.findall(used):
        if kind == "shard" and not where.startswith("IDX:"):
            return tuple(
                0 if held == "-" else max(0, int(total) - int(held)) for held, total in _PER_GPU.findall(where)
            )
    return ()


def gpu_fraction(shards: int, per_gpu: int) -> float:
    """What `shards` shares of one GPU count as against a GPU cap: their fraction of it, or a whole GPU where the
    count of shares a GPU has is not said (0) or is no more than theirs."""
    return shards / per_gpu if per_gpu > shards else 1.0


def gpus_held(gpus: int, shards: int, per_gpu: int) -> float:
    """The GPUs a job holds: its whole GPUs, and its shares as their fraction of a GPU (gpu_fraction)."""
    return gpus + gpu_fraction(shards, per_gpu) if shards else gpus


def share_choices(per_gpu: int) -> list[tuple[int, str]]:
    """The shares of one GPU offered beside whole GPUs where a GPU is cut into `per_gpu`: 1 to per_gpu - 1, each
    as the pages name it (none where per_gpu is 0 or 1)."""
    return [(k, share_words(k, per_gpu)) for k in range(1, per_gpu)]


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
        "shards_free_per_gpu": shards_free_per_gpu(used),
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

"""Slurm's GRES strings as sinfo and squeue print them: GPUs in all, and GPUs by type (standard library only).

A typed cluster declares `Gres=gpu:a100:4` (gres.conf `Type=a100`); sinfo
prints `gpu:a100:4(S:0-1)` for a node and `gpu:a100:2(IDX:0-1)` for what is
in use; an untyped one `gpu:4`.  A node may carry several types
(`gpu:v100:2,gpu:a100:2`).  Type names are what the admin wrote in
gres.conf: letters, digits and `_.-`.
"""

from __future__ import annotations

import re

GPU_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")  # a type name as a session may ask for it
_GPUS = re.compile(r"(?:^|,)gpu(?::([^:,(]+))?:([0-9]+)")


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

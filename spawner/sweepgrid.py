"""A sweep's points from its grid (pure, standard library only): the hub's table and the task on the node agree.

The hub checks a grid and keeps it as {"grid": {name: {"values": [...]}}, "sample": N, "seed": S}
(spawner/hub/runs/grid.py); the job script carries that, never every task's
point, and each task derives its own from its SLURM_ARRAY_TASK_ID with the same
function the hub uses for the table.  The first parameter varies slowest, as
itertools.product.
"""

from __future__ import annotations

import math
import random

Axes = tuple[tuple[str, tuple], ...]
_DRAW_LIMIT = 2**62  # random.sample(range(n)) needs n to fit a C ssize_t; beyond it, draws by randrange


def axes_of(settings: dict) -> Axes:
    return tuple((name, tuple(spec["values"])) for name, spec in settings["grid"].items())


def size(axes: Axes) -> int:
    return math.prod(len(values) for _, values in axes)


def point(axes: Axes, index: int) -> dict:
    """The grid's `index`-th point (mixed radix: the last parameter varies fastest)."""
    found = {}
    for name, values in reversed(axes):
        index, digit = divmod(index, len(values))
        found[name] = values[digit]
    return {name: found[name] for name, _ in axes}


def indices(axes: Axes, sample: int, seed: int) -> list[int]:
    """The grid's points a sweep runs, in task order: all of them, or a sample of `sample` (sorted)."""
    total = size(axes)
    if not sample or sample >= total:
        return list(range(total))
    rng = random.Random(seed)
    if total < _DRAW_LIMIT:
        return sorted(rng.sample(range(total), sample))
    chosen: set[int] = set()
    while len(chosen) < sample:  # a grid this large: a repeat is all but impossible
        chosen.add(rng.randrange(total))
    return sorted(chosen)


def points(settings: dict) -> list[dict]:
    axes = axes_of(settings)
    return [point(axes, i) for i in indices(axes, settings.get("sample", 0), settings.get("seed", 0))]


def task_point(settings: dict, task: int) -> dict:
    """The point of one task (what a task on the node runs)."""
    axes = axes_of(settings)
    return point(axes, indices(axes, settings.get("sample", 0), settings.get("seed", 0))[task])

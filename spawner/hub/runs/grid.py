"""A sweep's grid: what a user asks to vary -> the checked list of parameter sets, one per array task (pure).

    {"grid": {"lr": {"values": [0.001, 0.01]},
              "batch_size": {"range": {"from": 32, "to": 128, "steps": 3, "scale": "log"}},
              "epochs": {"value": 1}},
     "sample": 0, "seed": 0, "at_once": 4, "objective": "accuracy", "best": "max"}

Each value is checked against the notebook's parameters cell with the same
words as a single run (spawner/notebookparams/).  The points are never stored: the
hub keeps the sweep's settings (grid, sample, seed) and derives the same
points again for the table, in the same order (the first parameter varies
slowest, as itertools.product), so the record stays small for 1,000 tasks.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass

from portal.config import show
from portal.settings.runs import SweepSettings

from ... import sweepgrid
from ...notebookparams import Parameter, check_values

KEYS = ("grid", "sample", "seed", "at_once", "objective", "best")
MODES = ("value", "values", "range")
MAX_AXIS = 10_000  # values of one parameter (a range's steps, a list's length)
MAX_VALUES = 4_000  # values of all parameters together, counted before any is made (64 KiB of record hold fewer)
NUMBERS = ("int", "float")
_OBJECTIVE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")


class SweepError(ValueError):
    """The sweep cannot run as asked; str(e) says why and what to do."""


@dataclass(frozen=True)
class Sweep:
    axes: tuple[tuple[str, tuple], ...]  # (parameter, its values), in the user's order
    sample: int  # 0: the whole grid
    seed: int
    at_once: int
    objective: str  # "" = the first result a task records
    best: str  # "max" or "min"

    @property
    def size(self) -> int:
        """Points of the whole grid."""
        return sweepgrid.size(self.axes)

    @property
    def tasks(self) -> int:
        return min(self.sample, self.size) if self.sample else self.size

    @property
    def varied(self) -> list[str]:
        return [name for name, values in self.axes if len(values) > 1]

    def points(self) -> list[dict]:
        """One parameter set per task, in task order (spawner/sweepgrid.py: the tasks on the nodes agree)."""
        return sweepgrid.points(self.settings())

    @classmethod
    def from_settings(cls, data: dict) -> Sweep:
        """The sweep a record keeps (settings(), written by the hub when it submitted it: not checked again)."""
        axes = sweepgrid.axes_of(data)
        return cls(
            axes,
            data.get("sample", 0),
            data.get("seed", 0),
            data.get("at_once", 1),
            data.get("objective", ""),
            data.get("best", "max"),
        )

    def settings(self) -> dict:
        """What "run again" repeats: the grid as lists of its values, the same sample and seed."""
        return {
            "grid": {name: {"values": list(values)} for name, values in self.axes},
            "sample": self.sample,
            "seed": self.seed,
            "at_once": self.at_once,
            "objective": self.objective,
            "best": self.best,
        }


def _whole(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SweepError(f"sweep: {what} must be a whole number from {low} to {high}, not {show(value)}.")
    return value


def _round(value: float) -> float:
    """12 significant digits: 0.1 + 0.2 shows as 0.3 in the table and in the notebook."""
    return float(f"{value:.12g}")


def range_values(spec: object, parameter: Parameter) -> list:
    """{"from", "to", "steps", "scale"} -> the values, for a number parameter; whole numbers rounded, once each."""
    name = parameter.name
    if parameter.type not in NUMBERS:
        raise SweepError(
            f"sweep: {name} is {parameter.type} (its default is {parameter.default}); a range is for numbers: "
            "list its values instead."
        )
    if not isinstance(spec, dict) or set(spec) - {"from", "to", "steps", "scale"} or not {"from", "to"} <= set(spec):
        raise SweepError(f'sweep: the range of {name} must be {{"from": 1, "to": 10, "steps": 5, "scale": "linear"}}.')
    low, high = spec["from"], spec["to"]
    for end in (low, high):
        if isinstance(end, bool) or not isinstance(end, (int, float)) or not math.isfinite(end):
            raise SweepError(f"sweep: the range of {name} goes from a number to a number, not {show(end)}.")
    steps = _whole(spec.get("steps", 5), f"the steps of {name}'s range", 2, MAX_AXIS)
    scale = spec.get("scale", "linear")
    if scale == "log":
        if low <= 0 or high <= 0:
            raise SweepError(f"sweep: a log range of {name} needs numbers above 0, not {low} to {high}.")
        found = [math.exp(math.log(low) + i * (math.log(high) - math.log(low)) / (steps - 1)) for i in range(steps)]
    elif scale == "linear":
        found = [low + i * (high - low) / (steps - 1) for i in range(steps)]
    else:
        raise SweepError(f'sweep: the scale of {name}\'s range is "linear" or "log", not {show(scale)}.')
    if not all(math.isfinite(v) for v in found):  # from -1e308 to 1e308: the steps overflow
        raise SweepError(f"sweep: the range of {name} is too wide to divide into {steps} steps.")
    if parameter.type == "int":
        return list(dict.fromkeys(round(v) for v in found))
    return [_round(v) for v in found]


def _count(spec: object) -> int:
    """How many values a grid entry asks for, read from its shape alone (what it is made of is checked later)."""
    if not isinstance(spec, dict) or len(spec) != 1:
        return 1
    mode, given = next(iter(spec.items()))
    if mode == "values":
        return len(given) if isinstance(given, list) else 1
    if mode == "range" and isinstance(given, dict):
        steps = given.get("steps", 5)
        return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else 1
    return 1


def axis(name: object, spec: object, declared: dict[str, Parameter], path: str) -> tuple[str, tuple]:
    """One entry of the grid -> (name, its values), each value checked as a single run's."""
    if not isinstance(name, str) or name not in declared:
        names = ", ".join(declared)
        raise SweepError(f"sweep: {path} has no parameter {show(name)}; its parameters are {names}.")
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in MODES:
        raise SweepError(
            f'sweep: give {name} one of {{"value": x}}, {{"values": [x, y]}} or '
            '{"range": {"from": 1, "to": 10, "steps": 5, "scale": "linear"}}.'
        )
    mode, given = next(iter(spec.items()))
    if mode == "value":
        values = [given]
    elif mode == "values":
        if not isinstance(given, list) or not given:
            raise SweepError(f"sweep: the values of {name} must be a list of at least one value.")
        if len(given) > MAX_AXIS:
            raise SweepError(f"sweep: at most {MAX_AXIS} values of {name}.")
        values = given
    else:
        values = range_values(given, declared[name])
    if any(
        isinstance(v, float) and not math.isfinite(v) for v in values
    ):  # JSON's NaN, Infinity: no browser reads them
        raise SweepError(f"sweep: the values of {name} must be finite numbers (not NaN or Infinity).")
    try:
        checked = [check_values({name: v}, [declared[name]], path)[name] for v in values]
    except ValueError as e:
        raise SweepError(f"sweep: {e}") from None
    once = {json.dumps(v, sort_keys=True): v for v in checked}  # a value listed twice runs once
    return name, tuple(once.values())


def parse_sweep(options: object, declared: list[Parameter], path: str, limits: SweepSettings) -> Sweep:
    """The sweep a user asks for, checked against the notebook's parameters and the admin's limits on size
    (GPU-hours are checked by the caller, who knows the run's shape)."""
    if not isinstance(options, dict) or set(options) - set(KEYS):
        raise SweepError(f"sweep must be a JSON object with {', '.join(KEYS)} (only grid is required).")
    by_name = {p.name: p for p in declared}
    if not by_name:
        raise SweepError(
            f'{path} has no parameters cell (a code cell tagged "parameters"), so there is nothing to sweep; '
            "tag the cell that sets its parameters."
        )
    grid = options.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise SweepError("sweep: the grid is empty; give at least one parameter a list of values or a range.")
    if sum(_count(spec) for spec in grid.values()) > MAX_VALUES:  # before any value is made or checked
        raise SweepError(
            f"sweep: at most {MAX_VALUES:,} values in all the grid's lists and ranges; fewer steps, or a sample."
        )
    axes = tuple(axis(name, spec, by_name, path) for name, spec in grid.items())
    sample = _whole(options.get("sample", 0), "sample", 0, limits.max_tasks)
    seed = _whole(options.get("seed", random.randrange(2**31)), "seed", 0, 2**31 - 1)
    sweep = Sweep(axes, sample, seed, 1, "", "max")
    if sweep.tasks < 2:
        raise SweepError("sweep: this grid has one point; give a parameter two or more values, or run it once.")
    if sweep.tasks > limits.max_tasks:
        raise SweepError(
            f"sweep: {sweep.tasks:,} runs is more than the {limits.max_tasks:,} a sweep may have here; "
            "fewer values, or a random sample (sample: N)."
        )
    at_once = _whole(options.get("at_once", limits.max_at_once), "at_once", 1, limits.max_at_once)
    objective = options.get("objective", "")
    if not isinstance(objective, str) or (objective and not _OBJECTIVE.fullmatch(objective)):
        raise SweepError(f"sweep: objective names one result, such as accuracy, not {show(objective)}.")
    best = options.get("best", "max")
    if best not in ("max", "min"):
        raise SweepError(f'sweep: best is "max" or "min", not {show(best)}.')
    return Sweep(axes, sample, seed, min(at_once, sweep.tasks), objective, best)


def gpu_hours(tasks: int, nodes: int, gpus: float, hours: float) -> float:
    """The most a sweep can cost: every task to its time limit."""
    return tasks * nodes * gpus * hours

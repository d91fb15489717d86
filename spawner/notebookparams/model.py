"""What a parameters cell declares: a typed parameter, where its value sits, and why a notebook cannot run."""

from __future__ import annotations

from dataclasses import dataclass, field

PARAMETERS_TAG = "parameters"
MAX_CELL = 64 * 1024  # bytes of a parameters cell read (the hub reads it for everyone)
MAX_PARAMETERS = 200
MAX_VALUES = 32 * 1024  # bytes of the user's values as JSON (they travel in the job script and the hub's record)
MAX_TEXT = 200  # characters of a default or a help text kept


class NotRunnable(ValueError):
    """The file cannot run as a job; str(e) says why and what to do."""


@dataclass(frozen=True)
class Parameter:
    """One assignment of the parameters cell, as JupyterLab's dialog shows it.

    `line` and `end_line` (1-based, in the cell) say where the assignment is; they take no part in
    equality (two reads of the same declaration are equal wherever it sits) and stay out of to_dict().
    """

    name: str
    type: str  # "int", "float", "bool", "str", "list", "dict", "None" or "expression"
    default: str  # the default as written in the notebook
    help: str = ""
    line: int = field(default=0, compare=False)
    end_line: int = field(default=0, compare=False)

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "default": self.default, "help": self.help}


@dataclass(frozen=True)
class Assignment:
    """A parameter and where its value's text lies in the cell: (line, column), 0-based, in characters,
    the end exclusive; a rewrite replaces that text and nothing else."""

    parameter: Parameter
    start: tuple[int, int]
    end: tuple[int, int]


def too_many(path: str) -> NotRunnable:
    return NotRunnable(f"{path}: its parameters cell has more than {MAX_PARAMETERS} parameters.")

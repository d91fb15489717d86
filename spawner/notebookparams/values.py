"""The user's parameter values, checked against what the notebook's parameters cell declares.

Values are JSON; papermill writes them into the notebook in its language.
"""

from __future__ import annotations

import json

from .model import MAX_VALUES, Parameter

_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "str": "a text",
    "list": "a list",
    "dict": "a mapping",
}


def _fits(kind: str, value: object) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    return True  # "None", "expression": any JSON value


def check_value(name: str, value: object, declared: Parameter) -> object:
    """One value for the parameter `declared` (a float's whole number becomes a float); a ValueError names
    the parameter, its default and what it must be."""
    if not _fits(declared.type, value):
        raise ValueError(
            f"parameters: {name} must be {_WORDS[declared.type]} (its default is {declared.default}), "
            f"not {json.dumps(value)[:60]}."
        )
    if declared.type == "float" and isinstance(value, int):
        return float(value)
    return value


def check_values(values: object, declared: list[Parameter], path: str) -> dict:
    """The user's parameter values, each checked against the notebook's declaration (a ValueError says
    which and why)."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError('parameters must be a JSON object such as {"lr": 0.1}.')
    if len(json.dumps(values)) > MAX_VALUES:
        raise ValueError(
            f"parameters: at most {MAX_VALUES // 1024} KiB of values; put data in a file and pass its name."
        )
    by_name = {p.name: p for p in declared}
    if values and not by_name:
        raise ValueError(f'{path} has no parameters cell (a code cell tagged "parameters"), so it takes no parameters.')
    checked = {}
    for name, value in values.items():
        if name not in by_name:
            raise ValueError(f"parameters: {path} has no parameter {name!r}; its parameters are {', '.join(by_name)}.")
        checked[name] = check_value(name, value, by_name[name])
    return checked

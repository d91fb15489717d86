"""Loading the admin YAML file into `PortalSettings`, with errors an admin can act on.

Default file: /etc/dsportal/portal.yaml; ``DSPORTAL_CONFIG`` or ``--config``
override it.  `load_config` raises `ConfigError` carrying every problem, each
as ``FILE: key.path: VALUE (what is allowed)``, e.g.
``portal.yaml: slurm.partitions[1].max_gpus: -2 (must be an integer from 0 to 16)``.

Runs in the hub and in `dsportal check-config`.  pydantic does the checking;
this module only words its findings: pydantic's own messages name schema
keywords ("Input should be less than or equal to 16"), not what to write.
"""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import annotated_types
import yaml
from pydantic import BaseModel, ValidationError

from .settings import RENAMED_SECTIONS, PortalSettings, Rule

DEFAULT_PATH = "/etc/dsportal/portal.yaml"
ENV_VAR = "DSPORTAL_CONFIG"


class ConfigError(ValueError):
    """The config file is unreadable or invalid; `errors` lists every problem."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = [f"{source}: {e}" for e in errors]
        super().__init__("\n".join(self.errors))


def show(value: Any) -> str:
    """A value as it appears in an error message, cut to a readable length."""
    if isinstance(value, str):
        text = json.dumps(value)
    elif isinstance(value, (dict, list)):
        text = "a mapping" if isinstance(value, dict) else "a list"
    elif value is None:
        text = "null (empty)"
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- a declared type in words ------------------------------------------------------
Slot = tuple[Any, list]  # (type, its metadata)


def unwrap(tp: Any, metadata: list | None = None) -> Slot:
    meta = list(metadata or [])
    while typing.get_origin(tp) is Annotated:
        tp, *more = typing.get_args(tp)
        for m in more:  # a Field(...) in Annotated carries its constraints in .metadata
            meta.extend(getattr(m, "metadata", None) or [m])
    return tp, meta


def _bound(meta: list, kind: type) -> Any:
    attribute = {"MinLen": "min_length"}.get(kind.__name__, kind.__name__.lower())
    return next((getattr(m, attribute) for m in meta if isinstance(m, kind)), None)


def describe(slot: Slot) -> str:
    """What a value of this declared type must be, e.g. 'must be an integer from 1 to 16'."""
    tp, meta = slot
    rule = next((m for m in meta if isinstance(m, Rule)), None)
    if rule:
        return rule.describe
    origin = typing.get_origin(tp)
    if tp is bool:
        return "must be true or false"
    if tp is int:
        return f"must be an integer from {_bound(meta, annotated_types.Ge)} to {_bound(meta, annotated_types.Le)}"
    if tp is float:
        return (
            f"must be a number above {_bound(meta, annotated_types.Gt):g} "
            f"and at most {_bound(meta, annotated_types.Le):g}"
        )
    if origin is Literal:
        return "must be one of " + ", ".join(typing.get_args(tp))
    if origin is list:
        least = _bound(meta, annotated_types.MinLen)
        return f"must be a list of {f'at least {least} ' if least else ''}entries; each {describe(unwrap(typing.get_args(tp)[0]))}"
    if origin is dict:
        name, value = (describe(unwrap(t)) for t in typing.get_args(tp))
        return f"must be a mapping; each name {name}, each value {value}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "must be a mapping of settings"
    return "any value"


def field_slot(model: type[BaseModel], name: str) -> Slot:
    info = model.model_fields[name]
    return unwrap(info.annotation, info.metadata)


def slot_at(loc: tuple) -> Slot | None:
    """The declared type at a pydantic error location (None: not a declared key)."""
    slot: Slot = (PortalSettings, [])
    for part in loc:
        tp, _ = slot
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if part not in tp.model_fields:
                return None
            slot = field_slot(tp, part)
        elif origin is list:
            slot = unwrap(typing.get_args(tp)[0])
        elif origin is dict:
            slot = unwrap(typing.get_args(tp)[0 if part == "[key]" else 1])
        else:
            return None
    return slot


# --- pydantic's findings in words ----------------------------------------------------------
def key_path(loc: tuple) -> str:
    """('slurm', 'partitions', 1, 'max_gpus') -> 'slurm.partitions[1].max_gpus'."""
    if loc and loc[-1] == "[key]":  # a bad name in a mapping
        return f"{key_path(loc[:-2])} key"
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def _order(loc: tuple) -> tuple:
    """Declaration order; an unknown key comes first among its siblings, as an admin reads the file."""
    order = []
    for i, part in enumerate(loc):
        tp = (slot_at(loc[:i]) or (None, []))[0]
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            names = list(tp.model_fields)
            order.append(names.index(part) if part in names else -1)
        else:
            order.append(part if isinstance(part, int) else 0)
    return tuple(order)


def _sentences(error: dict, written: dict[str, str] | None = None) -> list[str]:
    """`written`: a section's name -> the older name the file gives it (the error says what the admin wrote)."""
    loc, kind = tuple(error["loc"]), error["type"]
    path = key_path((written.get(loc[0], loc[0]), *loc[1:]) if loc and written else loc) or "(top level)"
    if kind == "extra_forbidden":
        parent = slot_at(loc[:-1])[0]
        return [f"{path}: unknown setting (allowed here: {', '.join(parent.model_fields)})"]
    if kind == "dsportal_rule":
        out = []
        for problem in error["ctx"]["problems"]:
            if isinstance(problem, str):
                out.append(f"{path}{problem}" if loc else problem)  # a whole sentence
            else:
                sub, value, allowed = problem
                where = f"{path}{sub}" if loc else sub.lstrip(".")  # a rule across sections names full paths
                out.append(f"{where}: {show(value)} ({allowed})")
        return out
    slot = slot_at(loc)
    allowed = describe(slot) if slot else error["msg"]
    if kind == "missing":
        return [f"{path}: missing (required; {allowed})"]
    return [f"{path}: {show(error['input'])} ({allowed})"]


def renamed_warnings(settings: PortalSettings) -> list[str]:
    """One sentence per section the file names by its older name (check-config and the hub's start say them)."""
    return [
        f"{old}: is called {RENAMED_SECTIONS[old]}: since DS Portal 0.2.0 and is read as it until 0.3.0; "
        f"rename the section to {RENAMED_SECTIONS[old]}:"
        for old in settings.renamed
    ]


def config_path(explicit: str | os.PathLike | None = None) -> Path:
    return Path(explicit or os.environ.get(ENV_VAR) or DEFAULT_PATH)


def parse_config(data: Any, source: str = "portal.yaml") -> PortalSettings:
    if data is not None and not isinstance(data, dict):
        raise ConfigError(source, [f"(top level): {show(data)} (must be a mapping of settings)"])
    try:
        return PortalSettings.model_validate(data or {})
    except ValidationError as e:
        written = {new: old for old, new in RENAMED_SECTIONS.items() if old in (data or {})}
        found = sorted(e.errors(), key=lambda err: _order(tuple(err["loc"])))
        raise ConfigError(source, [line for err in found for line in _sentences(err, written)]) from None


def load_config(path: str | os.PathLike | None = None) -> PortalSettings:
    path = config_path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(
            str(path), [f"cannot read the file ({e.strerror}); create it from deploy/portal.example.yaml"]
        ) from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(path.name, [f"{where}not valid YAML ({problem})"]) from e
    return parse_config(data, path.name)


_LOADED: dict[str, tuple[tuple[int, int], PortalSettings]] = {}


def loaded_config(path: str | os.PathLike | None = None) -> PortalSettings:
    """The admin file, read and validated once per process while it stays the same: the hub's config, its
    spawners, handlers and login share one `PortalSettings` (a changed file, size or mtime, is read again)."""
    path = config_path(path)
    try:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        return load_config(path)  # its words: the file cannot be read
    key = str(path)
    if key not in _LOADED or _LOADED[key][0] != stamp:
        _LOADED[key] = (stamp, load_config(path))
    return _LOADED[key][1]

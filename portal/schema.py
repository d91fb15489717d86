"""A small declarative schema for the admin YAML file.

Every admin setting is declared once (`Key`: kind, default, help text); the
loader, `dsportal check-config` and the commented example file all come from
that one declaration.  Validation collects every error with its key path
instead of stopping at the first one, and refuses unknown keys.

Why not jsonschema or pydantic: their messages name schema keywords
("-2 is less than the minimum of 1"), not what an admin should write, and
neither renders a commented example file.  The engine below is ~200 lines.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

REQUIRED = object()


class Settings(SimpleNamespace):
    """A validated section: attribute access, plus `to_dict` for logging."""

    def to_dict(self) -> dict:
        return {k: _plain(v) for k, v in vars(self).items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Settings):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def show(value: Any) -> str:
    """A value as it appears in an error message, cut to a readable length."""
    if isinstance(value, str):
        text = json.dumps(value)
    elif isinstance(value, (dict, list)):
        text = "a mapping" if isinstance(value, dict) else "a list"
    elif value is None:
        text = "null (empty)"
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Errors(list):
    def add(self, path: str, value: Any, allowed: str) -> None:
        self.append(f"{path}: {show(value)} ({allowed})")


class Kind:
    """How one value is checked and converted. `describe` is the allowed-text."""

    describe = "any value"

    def check(self, value: Any, path: str, errors: Errors) -> Any:
        return value


@dataclass
class Int(Kind):
    low: int
    high: int

    @property
    def describe(self) -> str:
        return f"must be an integer from {self.low} to {self.high}"

    def check(self, value, path, errors):
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            errors.add(path, value, self.describe)
            return None
        return value


@dataclass
class Number(Kind):
    low: float
    high: float

    @property
    def describe(self) -> str:
        return f"must be a number above {self.low:g} and at most {self.high:g}"

    def check(self, value, path, errors):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not self.low < value <= self.high:
            errors.add(path, value, self.describe)
            return None
        return value


@dataclass
class Bool(Kind):
    describe: str = "must be true or false"

    def check(self, value, path, errors):
        if not isinstance(value, bool):
            errors.add(path, value, self.describe)
            return None
        return value


@dataclass
class Text(Kind):
    """A string matching `pattern` (full match); `describe` says it in words."""

    pattern: str
    describe: str
    allow_empty: bool = False

    def check(self, value, path, errors):
        if not isinstance(value, str):
            errors.add(path, value, self.describe)
            return None
        if value == "" and self.allow_empty:
            return value
        if not re.fullmatch(self.pattern, value):
            errors.add(path, value, self.describe)
            return None
        return value


@dataclass
class Choice(Kind):
    choices: tuple[str, ...]

    @property
    def describe(self) -> str:
        return "must be one of " + ", ".join(self.choices)

    def check(self, value, path, errors):
        if value not in self.choices:
            errors.add(path, value, self.describe)
            return None
        return value


@dataclass
class ListOf(Kind):
    item: Kind
    min_items: int = 0

    @property
    def describe(self) -> str:
        least = f"at least {self.min_items} " if self.min_items else ""
        return f"must be a list of {least}entries; each {self.item.describe}"

    def check(self, value, path, errors):
        if not isinstance(value, list) or len(value) < self.min_items:
            errors.add(path, value, self.describe)
            return None
        return [self.item.check(v, f"{path}[{i}]", errors) for i, v in enumerate(value)]


@dataclass
class MapOf(Kind):
    key: Text
    value: Kind

    @property
    def describe(self) -> str:
        return f"must be a mapping; each name {self.key.describe}, each value {self.value.describe}"

    def check(self, value, path, errors):
        if not isinstance(value, dict):
            errors.add(path, value, self.describe)
            return None
        out = {}
        for k, v in value.items():
            if self.key.check(k, f"{path} key", errors) is not None:
                out[k] = self.value.check(v, f"{path}.{k}", errors)
        return out


@dataclass
class Key:
    name: str
    kind: Kind
    help: str = ""
    default: Any = REQUIRED
    example: Any = None  # shown in the example file instead of the default


@dataclass
class Section(Kind):
    keys: list[Key]
    help: str = ""
    # Cross-key rules: f(settings, path, errors) after every key is valid.
    rules: list[Callable[[Settings, str, Errors], None]] = field(default_factory=list)

    describe = "must be a mapping of settings"

    def check(self, value, path, errors):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            errors.add(path or "(top level)", value, self.describe)
            return None
        known = {k.name: k for k in self.keys}
        for name in value:
            if name not in known:
                where = f"{path}.{name}" if path else str(name)
                errors.append(f"{where}: unknown setting (allowed here: {', '.join(known)})")
        out = Settings()
        before = len(errors)
        for key in self.keys:
            where = f"{path}.{key.name}" if path else key.name
            if key.name in value:
                setattr(out, key.name, key.kind.check(value[key.name], where, errors))
            elif isinstance(key.kind, Section):
                setattr(out, key.name, key.kind.check({}, where, errors))
            elif key.default is REQUIRED:
                errors.append(f"{where}: missing (required; {key.kind.describe})")
            else:  # defaults go through the same check, so they come out the same shape
                setattr(out, key.name, key.kind.check(copy.deepcopy(key.default), where, errors))
        if len(errors) == before:
            for rule in self.rules:
                rule(out, path, errors)
        return out

    def defaults(self) -> dict:
        return {
            k.name: (k.kind.defaults() if isinstance(k.kind, Section) else k.default)
            for k in self.keys
            if k.default is not REQUIRED or isinstance(k.kind, Section)
        }

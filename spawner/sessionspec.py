"""The session spec: what the hub tells a session's job of the admin config (JSON in contract.SESSION_VAR).

The hub builds it (spawner/hub/request/specbuilder.py); the node reads it once at the
session's start (spawner/job/session/start.py, and the server extension in
spawner/jupyter/extension.py).  Standard library only, like spawner/contract.py:
importing it on a compute node pulls in no hub code.

Every default is declared once, on the fields below; a key the hub did not
send takes it.  A key this node does not know, or a value of the wrong type,
is a ValueError that names the key.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field

from .contract import SESSION_VAR


@dataclass(frozen=True)
class ClockSpec:
    """The session's clock in JupyterLab (spawner/jupyter/clock/clock.py)."""

    squeue: str = "squeue"  # the command asked for the job's end time
    warn_minutes: tuple[int, ...] = (15, 5)  # JupyterLab notifies this many minutes before the time limit
    save_minutes: int = 3  # Slurm warns this long before the limit; JupyterLab then saves every document
    extend_hours: float = 0.0  # hours one extension adds; 0 = the session cannot be extended


@dataclass(frozen=True)
class IdleSpec:
    """What JupyterLab's idle warning shows (spawner/jupyter/session/activity.py); the hub's culler does the stopping."""

    timeout: int = 0  # seconds without use before the hub stops the session; 0 = never
    warning: int = 600  # seconds before that stop at which JupyterLab warns


@dataclass(frozen=True)
class TensorBoardSpec:
    max_instances: int = 3  # TensorBoards one session may run at once (spawner/jupyter/tensorboard/instances.py)


@dataclass(frozen=True)
class AppsSpec:
    """The apps the session offers (spawner/jupyter/apps/): VS Code, MLflow, the user's own web apps."""

    offered: tuple[str, ...] = ()  # app kinds, as spawner/jupyter/apps/catalog.py names them; () = none
    max_running: int = 4  # apps one session may run at once
    start_seconds: int = 90  # an app must answer on its socket this soon after its start
    code_server: str = "code-server"  # the command of vscode


@dataclass(frozen=True)
class UsageSpec:
    """How often the session tallies what it uses and reports it (spawner/jupyter/usage/sampler.py)."""

    sample_seconds: int = 30
    report_seconds: int = 60


@dataclass(frozen=True)
class ContinuationSpec:
    """Continuing the session in a new job (spawner/jupyter/continuation/): what a kernel may carry, and whose."""

    enabled: bool = False  # the hub's continue API may ask this session's server to carry its kernels out
    max_bytes: int = 4 * 10**9  # what one kernel's variables may take on disk
    dump_seconds: int = 120  # what one kernel has to write them
    keep_hours: float = 24.0  # carried variables older than this are deleted at a session's start
    continue_from: str = ""  # the job id of the session this one continues: its carried variables are loaded


@dataclass(frozen=True)
class SessionSpec:
    storage: dict[str, str] = field(default_factory=dict)  # ~/NAME links to storage mounts: name -> path
    # The admin's `kernels` section as the hub's config model dumps it (portal/settings/kernels.py, KernelSettings);
    # spawner/job/kernels/kernelspecs.py reads it.  Empty: the session offers only its own Python 3 kernel.
    kernels: dict[str, object] = field(default_factory=dict)
    tensorboard: TensorBoardSpec = field(default_factory=TensorBoardSpec)
    clock: ClockSpec = field(default_factory=ClockSpec)
    idle: IdleSpec = field(default_factory=IdleSpec)
    jupyterlab_news: bool = False  # false: JupyterLab never asks to fetch Jupyter's news
    guest_check_seconds: int = 3  # a shared session asks the hub about its guests' open connections this often
    usage: UsageSpec = field(default_factory=UsageSpec)
    apps: AppsSpec = field(default_factory=AppsSpec)
    continuation: ContinuationSpec = field(default_factory=ContinuationSpec)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SessionSpec:
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{SESSION_VAR} is not JSON ({e})") from None
        return _build(cls, data, "")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> SessionSpec:
        """The job's spec; no variable at all (a server started outside a portal job) is all defaults."""
        return cls.from_json(environ.get(SESSION_VAR) or "{}")


def _build(cls: type, data: object, key: str):
    """`data` (parsed JSON) as a `cls`: defaults for missing keys, ValueError for unknown keys or wrong types."""
    if not isinstance(data, dict):
        raise _wrong(key or "the spec", "a JSON object", data)
    prefix = f"{key}." if key else ""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(
            f"{SESSION_VAR}: unknown key {prefix}{unknown[0]} (the hub and this node may run "
            "different DS Portal versions)"
        )
    return cls(**{name: _value(hints[name], data[name], prefix + name) for name in names if name in data})


def _value(hint, value: object, key: str):
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, key)
    if hint is bool:
        if not isinstance(value, bool):
            raise _wrong(key, "true or false", value)
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _wrong(key, "an integer", value)
        return value
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _wrong(key, "a number", value)
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _wrong(key, "a string", value)
        return value
    if typing.get_origin(hint) is tuple:  # tuple[int, ...]: a JSON list
        item = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise _wrong(key, "a list", value)
        return tuple(_value(item, v, f"{key}[{i}]") for i, v in enumerate(value))
    if typing.get_origin(hint) is dict:  # dict[str, V]: a JSON object
        item = typing.get_args(hint)[1]
        if not isinstance(value, dict):
            raise _wrong(key, "a JSON object", value)
        return {k: v if item is object else _value(item, v, f"{key}.{k}") for k, v in value.items()}
    raise TypeError(f"no reading of {hint!r} ({key})")  # a field type this module does not handle yet


def _wrong(key: str, expected: str, value: object) -> ValueError:
    shown = json.dumps(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."  # one line in the session log
    return ValueError(f"{SESSION_VAR}: {key} must be {expected}, not {shown}")

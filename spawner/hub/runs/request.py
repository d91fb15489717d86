"""What a user asks to run as a job -> a validated `RunRequest` (pure; hub side).

The same checks and words as a session's options (spawner/hub/request/options.py):
user input is untrusted, every value is checked against the admin config
before anything reaches a job script or a command line.  The notebook's
parameters are checked later, against the notebook itself (spawner/notebookparams/).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from portal.config import show
from portal.settings import PortalSettings

from ..request.options import (
    AccountFacts,
    OptionsError,
    check_account,
    check_allocation,
    check_gpu_type,
    check_gpus,
    check_hours,
    check_partition,
    check_qos,
    check_shards,
    check_text,
    single_value,
)

ALLOWED_KEYS = (
    "path",
    "partition",
    "nodes",
    "gpus",
    "shards",
    "hours",
    "gpu_type",
    "account",
    "qos",
    "parameters",
    "sweep",
)
OPTIONAL_NAMES = ("gpu_type", "account", "qos")  # kept by "run again" only when chosen
KINDS = {".ipynb": "notebook", ".py": "python", ".sh": "shell"}
MAX_PATH = 1024
_DIGITS = re.compile(r"[0-9]{1,4}")


@dataclass(frozen=True)
class RunRequest:
    path: str  # relative to the user's home, normalised ("work/train.ipynb")
    kind: str  # "notebook", "python" or "shell"
    partition: str
    nodes: int
    gpus: int  # per node
    hours: float
    parameters: dict = field(default_factory=dict)  # checked against the notebook by the service
    gpu_type: str = ""  # as a session's (spawner/hub/request/options.py): "" for any type
    account: str = ""  # "" for the admin's (slurm.account) or the user's default
    qos: str = ""  # "" for the admin's (slurm.qos) or the association's default
    sweep: dict | None = None  # a sweep's grid (runs/grid.py), checked against the notebook by the service
    shards: int = 0  # shares of one GPU (Slurm's gres/shard) instead of whole GPUs, as a session's: one node's

    def settings(self) -> dict:
        """What "run again" repeats (the record keeps it): the options as a user sends them."""
        chosen = asdict(self)
        return {
            k: v
            for k, v in chosen.items()
            if k in ALLOWED_KEYS
            and not (k in OPTIONAL_NAMES and v == "")
            and not (k == "sweep" and v is None)
            and not (k == "shards" and not v)
        }


def check_path(value: Any) -> tuple[str, str]:
    """A file in the user's home, as JupyterLab names it -> (normalised path, kind)."""
    if not isinstance(value, str) or not value.strip():
        raise OptionsError("path: name the notebook or script to run, relative to your home, e.g. work/train.ipynb.")
    if len(value) > MAX_PATH or not value.isprintable():  # no control characters, no Unicode line breaks
        raise OptionsError("path: at most 1024 characters, without line breaks or control characters.")
    path = posixpath.normpath(value.strip())
    if path.startswith("/") or path == "." or path == ".." or path.startswith("../"):
        raise OptionsError(f"path: {show(value)} is outside your home; give a path inside it, e.g. work/train.ipynb.")
    kind = KINDS.get(posixpath.splitext(path)[1].lower())
    if kind is None:
        raise OptionsError(
            f"path: {show(value)} is not a notebook (.ipynb), Python script (.py) or shell script (.sh)."
        )
    return path, kind


def check_nodes(value: Any, max_nodes: int, partition: str) -> int:
    allowed = f"choose a whole number from 1 to {max_nodes} for partition {partition}"
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionsError(f"nodes: {show(value)} is not a whole number; {allowed}.")
    if not 1 <= value <= max_nodes:
        raise OptionsError(f"nodes: {value} is out of range; {allowed}.")
    return value


def parse_run(
    options: Any,
    settings: PortalSettings,
    gpu_types: dict[str, set[str]] | None = None,
    accounts: tuple[str, ...] | None = None,
    facts: AccountFacts | None = None,
    shards: dict[str, int] | None = None,
) -> RunRequest:
    """Validate `options` ({"path", "partition", "nodes", "gpus", "shards", "hours", "gpu_type", "account", "qos",
    "parameters"}; only path is required); Slurm's GPU types, the user's accounts and QOS, each partition's shards
    as a session's (None: not known now)."""
    if not isinstance(options, dict):
        raise OptionsError('A job must be a JSON object such as {"path": "work/train.ipynb", "gpus": 1, "hours": 2}.')
    unknown = [k for k in options if k not in ALLOWED_KEYS]
    if unknown:
        names = ", ".join(show(k) if isinstance(k, str) else repr(k) for k in unknown)
        raise OptionsError(f"Unknown option(s) {names}; allowed are {', '.join(ALLOWED_KEYS)}.")
    values = {k: (v if k in ("parameters", "sweep") else single_value(v)) for k, v in options.items()}
    for key, value in values.items():
        if key != "path":
            check_text(key, value)
    path, kind = check_path(values.get("path"))
    slurm = settings.slurm
    partition = check_partition(values["partition"], slurm) if "partition" in values else slurm.default_partition
    nodes = check_nodes(values.get("nodes", 1), partition.max_nodes, partition.name)
    gpus = check_gpus(values.get("gpus", 0), partition.max_gpus, partition.name)
    shared = check_shards(values.get("shards"), gpus, partition, slurm, shards)
    if shared and nodes > 1:
        raise OptionsError("shards: a run on shares of a GPU runs on one node; ask for 1 node, or whole GPUs.")
    hours = check_hours(values.get("hours", settings.runs.default_hours), settings.runs.max_hours)
    parameters = values.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise OptionsError('parameters must be a JSON object such as {"lr": 0.1}.')
    if parameters and kind != "notebook":
        raise OptionsError(f"parameters are for notebooks; {path} is a {kind} script and takes none.")
    sweep = check_sweep(values.get("sweep"), parameters, kind, path, settings)
    types = None if gpu_types is None else gpu_types.get(partition.name, set())
    gpu_type = check_gpu_type(values.get("gpu_type"), gpus, partition.name, slurm, types, shards=shared)
    account = check_account(values.get("account"), accounts)
    chosen_qos = check_qos(values.get("qos"), slurm, hours, account, facts)
    check_allocation(gpus or shared, account, slurm, facts)
    return RunRequest(
        path, kind, partition.name, nodes, gpus, hours, dict(parameters), gpu_type, account, chosen_qos, sweep, shared
    )


def check_sweep(sweep: Any, parameters: dict, kind: str, path: str, settings: PortalSettings) -> dict | None:
    """The sweep's shape before the notebook is read (its grid is checked against it by runs/grid.py)."""
    if sweep is None:
        return None
    if not settings.runs.sweeps.enabled:
        raise OptionsError("Sweeps are turned off on this cluster; run the notebook once per parameter set.")
    if kind != "notebook":
        raise OptionsError(f"sweeps are for notebooks; {path} is a {kind} script and takes no parameters.")
    if parameters:
        raise OptionsError('give a sweep\'s fixed values in its grid ({"value": x}), not in "parameters".')
    if not isinstance(sweep, dict):
        raise OptionsError('sweep must be a JSON object such as {"grid": {"lr": {"values": [0.1, 0.01]}}}.')
    return sweep


def run_name(path: str, reserved: str) -> str:
    """The Slurm job name of a run: the file's name in Slurm's name characters, never the sessions' name
    (the reconciler cancels every job of that name that no session owns)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", posixpath.basename(path))[:64] or "job"
    return name + "-job" if name == reserved else name

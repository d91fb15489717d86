"""A session's terminals reopened in its successor, each in the folder its shell was in (the user's server).

At the carry, each terminal's name and its shell's current folder (/proc/PID/cwd: the shell's own, after any
`cd`) go into terminals.json beside the kernels' manifest.  The successor's server opens a terminal of the same
name in the same folder as it starts, so JupyterLab's restored workspace reconnects each terminal tab to it.  What
ran in a terminal is not carried: a shell starts afresh.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...job.ownership import read_private_json, write_private_json

TERMINALS = "terminals.json"
MAX_TERMINALS = 20
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # terminado's names are numbers; a client may choose its own


def places(manager) -> list[dict]:
    """[{"name", "cwd"}] of the terminals `manager` (jupyter_server_terminals') runs now."""
    found = []
    for name, term in list(getattr(manager, "terminals", {}).items())[:MAX_TERMINALS]:
        try:
            cwd = os.readlink(f"/proc/{term.ptyproc.pid}/cwd")
        except (OSError, AttributeError):
            continue  # ended meanwhile
        found.append({"name": str(name), "cwd": cwd})
    return found


def write(base: Path, found: list[dict]) -> None:
    write_private_json(base / TERMINALS, found)


def read(base: Path) -> list[dict]:
    """What `write` wrote, when the folder and file are this user's alone; each entry checked (pure of the rest)."""
    found = read_private_json(base, TERMINALS)
    if not isinstance(found, list):
        return []
    return [
        {"name": e["name"], "cwd": e["cwd"]}
        for e in found[:MAX_TERMINALS]
        if isinstance(e, dict)
        and isinstance(e.get("name"), str)
        and NAME.fullmatch(e["name"])
        and isinstance(e.get("cwd"), str)
    ]


def reopen(manager, found: list[dict], home: str) -> list[str]:
    """Open each terminal of `found` by its name, in its folder (the home where the folder is gone); -> names."""
    opened = []
    for entry in found:
        if entry["name"] in manager.terminals:
            continue
        cwd = entry["cwd"] if os.path.isdir(entry["cwd"]) else home
        manager.create(name=entry["name"], cwd=cwd)
        opened.append(entry["name"])
    return opened

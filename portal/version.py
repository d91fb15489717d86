"""The portal's version, whose one source is pyproject.toml's `[project] version`.

Shown by `dsportal --version`, the hub's log at its start and the hub pages' footer
(spawner/hub/wiring/hubconfig.py); the JupyterLab extension's package.json carries the
same number (tests/unit/test_labext.py).
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "dsportal"
# Beside the packages in a checkout; absent in an installed wheel.
CHECKOUT_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def checkout_version(pyproject: Path) -> str | None:
    """The version a checkout's pyproject.toml declares, or None where the file is not the portal's."""
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return project.get("version") if project.get("name") == DISTRIBUTION else None


@cache
def version() -> str:
    """This code's version: its checkout's pyproject.toml when it runs from one (an older install's metadata
    may sit beside it on the path), else the installed distribution's metadata; "unknown" with neither."""
    found = checkout_version(CHECKOUT_PYPROJECT)
    if found:
        return found
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"

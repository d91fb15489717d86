"""The dev cluster's pinned dependencies, as `up` installs them and the tests compare them.

deploy/requirements.lock: every package of the portal's Python environment at one version, with its hashes
(pip-compile's output for pyproject.toml's dependencies, the extras the dev cluster installs and the wheel's
build tools).  deploy/proxy/package-lock.json: configurable-http-proxy and what it needs (`npm ci`).
`deploy/devcluster lock` writes both.  Standard library only: Debian's python3 runs this before the portal's
environment exists.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .common import VENV, run, say

HERE = Path(__file__).resolve().parent.parent  # deploy/
LOCK = HERE / "requirements.lock"
PROXY_LOCK = HERE / "proxy" / "package-lock.json"
# where `up` links the locked proxy (installed in PREFIX/proxy), ahead of npm's global one on PATH
PROXY_LINK = Path("/usr/local/bin/configurable-http-proxy")
# In the environment but not in the lock: the installer that came with the venv, and the portal itself
# (installed from the checkout with --no-deps once the lock is in).
NOT_LOCKED = frozenset({"pip", "dsportal"})

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def canonical(name: str) -> str:
    """A package's name as the index compares it (PEP 503): `Jinja2`, `jupyter_server` -> `jinja2`, `jupyter-server`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(lock_text: str) -> dict[str, str]:
    """Canonical name -> version of each `name==version` line of a pip-compile lock."""
    pins = {}
    for line in lock_text.splitlines():
        match = PIN.match(line)
        if match:
            pins[canonical(match.group(1))] = match.group(2)
    return pins


def installed_versions(venv: Path = VENV) -> dict[str, str]:
    """Canonical name -> version of every package in a virtual environment as `pip freeze --all` lists it (the
    installer and setuptools included; the portal, installed from a folder, is a URL there and not listed)."""
    freeze = run(
        [str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"], timeout=120
    ).stdout
    return locked_versions(freeze)


def differences(installed: dict[str, str], locked: dict[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """Name -> (installed, locked) for each package whose version differs or that only one side has."""
    names = (set(installed) | set(locked)) - NOT_LOCKED
    return {n: (installed.get(n), locked.get(n)) for n in sorted(names) if installed.get(n) != locked.get(n)}


def prune(venv: Path = VENV) -> None:
    """Uninstall what the lock no longer holds (an earlier lock's packages), so the environment is the lock."""
    locked = locked_versions(LOCK.read_text())
    extra = [n for n, (_, pinned) in differences(installed_versions(venv), locked).items() if pinned is None]
    if extra:
        say(f"removing from {venv} what deploy/requirements.lock no longer holds: {', '.join(extra)}")
        run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q", *extra], timeout=600)


def proxy_locked_version(package_lock: dict) -> str:
    """configurable-http-proxy's version in an npm package-lock.json (lockfileVersion 2 or 3)."""
    return package_lock["packages"]["node_modules/configurable-http-proxy"]["version"]


def proxy_lock() -> dict:
    return json.loads(PROXY_LOCK.read_text())

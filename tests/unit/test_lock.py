"""The pinned dependencies: deploy/requirements.lock satisfies pyproject.toml and pins every file by its hash;
deploy/proxy/package-lock.json matches its package.json; the helpers that `up` and the integration test use to
compare an environment with the lock (deploy/dev/locks.py)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from deploy.dev import locks

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DEVCLUSTER = (ROOT / "deploy" / "devcluster").read_text()
# the extras `deploy/devcluster lock` resolves (and so `up` installs), read from the script itself
EXTRAS = re.findall(r"--extra (\w+)", DEVCLUSTER)
LOCKED = locks.locked_versions(locks.LOCK.read_text())


def pins_and_hashes(lock_text: str) -> dict[str, list[str]]:
    """`name==version` -> the sha256 hashes on its continuation lines."""
    pins: dict[str, list[str]] = {}
    current = None
    for line in lock_text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            current = line.rstrip(" \\")
            pins[current] = []
        else:
            pins[current].extend(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
    return pins


def requirements_the_environment_holds() -> list[tuple[str, Requirement]]:
    """(where it is declared, requirement) for the project's dependencies, its locked extras and its build tools."""
    declared = [("dependencies", Requirement(r)) for r in PYPROJECT["project"]["dependencies"]]
    extras = PYPROJECT["project"]["optional-dependencies"]
    declared += [(f"extra {e}", Requirement(r)) for e in EXTRAS for r in extras[e]]
    declared += [("build-system", Requirement(r)) for r in PYPROJECT["build-system"]["requires"]]
    # a requirement for another platform or Python (a marker false here) is not in this environment
    return [(w, r) for w, r in declared if r.marker is None or r.marker.evaluate({"extra": ""})]


def test_the_lock_resolves_the_extras_the_dev_cluster_needs():
    assert {"test", "frameworks"} <= set(EXTRAS)
    assert set(EXTRAS) <= set(PYPROJECT["project"]["optional-dependencies"])


@pytest.mark.parametrize(
    "where, requirement",
    requirements_the_environment_holds(),
    ids=lambda x: str(x) if isinstance(x, Requirement) else x,
)
def test_every_requirement_of_pyproject_is_locked_at_a_version_it_allows(where, requirement):
    name = locks.canonical(requirement.name)
    assert name in LOCKED, f"{requirement} ({where}) is not in deploy/requirements.lock: run `deploy/devcluster lock`"
    assert requirement.specifier.contains(LOCKED[name], prereleases=True), (
        f"deploy/requirements.lock pins {name}=={LOCKED[name]}, which {requirement} ({where}) does not allow: "
        "run `deploy/devcluster lock`"
    )


def test_every_pin_is_exact_and_carries_its_files_hashes():
    pins = pins_and_hashes(locks.LOCK.read_text())
    assert len(pins) == len(LOCKED) > 100  # the portal's environment: JupyterHub, JupyterLab, the frameworks ...
    assert [p for p in pins if not locks.PIN.match(p)] == []
    assert [p for p, hashes in pins.items() if not hashes] == []


def test_the_lock_names_its_command_and_no_machine_of_ours():
    text = locks.LOCK.read_text()
    assert "deploy/devcluster lock" in text.split("\n\n")[0]  # the header says how to update it
    for machine_specific in ("--index-url", "--extra-index-url", "--find-links", "file://", "/opt/", "/tmp/"):
        assert machine_specific not in text


def test_the_proxy_lock_matches_its_package_json_and_pins_every_package_by_integrity():
    package = json.loads((locks.PROXY_LOCK.parent / "package.json").read_text())
    lock = locks.proxy_lock()
    assert lock["lockfileVersion"] >= 2
    assert lock["packages"][""]["dependencies"] == package["dependencies"]  # else `npm ci` refuses the lock
    wanted = package["dependencies"]["configurable-http-proxy"]
    assert wanted.startswith("^")
    low, locked = Version(wanted[1:]), Version(locks.proxy_locked_version(lock))
    assert locked >= low and locked.major == low.major  # the caret range: same major, at least the floor
    installed = {k: v for k, v in lock["packages"].items() if k}
    assert installed and all(v.get("integrity", "").startswith("sha512-") for v in installed.values())


def test_names_compare_as_the_index_compares_them():
    assert [locks.canonical(n) for n in ("Jinja2", "jupyter_server", "ruamel.yaml", "typing-extensions")] == [
        "jinja2",
        "jupyter-server",
        "ruamel-yaml",
        "typing-extensions",
    ]


def test_locked_versions_reads_pins_and_not_hashes_comments_or_urls():
    text = (
        "# via deploy/devcluster lock\n"
        "jinja2==3.1.6 \\\n"
        "    --hash=sha256:" + "a" * 64 + "\n"
        "    # via jupyterhub\n"
        "torch==2.13.0+cpu \\\n"
        "    --hash=sha256:" + "b" * 64 + "\n"
        "Send2Trash==2.2.0 ; sys_platform != 'win32'\n"
        "dsportal @ file:///srv/checkout\n"
    )
    assert locks.locked_versions(text) == {"jinja2": "3.1.6", "torch": "2.13.0+cpu", "send2trash": "2.2.0"}


def test_differences_name_what_differs_and_skip_the_installer_and_the_portal():
    installed = {"pip": "23.0.1", "dsportal": "0.1.0", "jinja2": "3.1.6", "tornado": "6.5.0", "leftover": "1.0"}
    locked = {"jinja2": "3.1.6", "tornado": "6.6.1", "pyyaml": "6.0.4"}
    assert locks.differences(installed, locked) == {
        "leftover": ("1.0", None),
        "pyyaml": (None, "6.0.4"),
        "tornado": ("6.5.0", "6.6.1"),
    }
    assert locks.differences(locked, locked) == {}

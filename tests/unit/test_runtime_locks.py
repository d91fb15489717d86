"""The runtime locks a site installs (deploy/locks/runtime-pyX.Y.txt, written by `deploy/devcluster lock`): one per
supported Python, pyproject's own dependencies with all they need and nothing of the tests, docs, frameworks or
apps, every pin with its hashes, at the versions the tests ran (deploy/requirements.lock)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHONS = ("3.11", "3.12", "3.13")
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", re.MULTILINE)


def pins(text: str) -> dict[str, str]:
    return {name.lower().replace("_", "-"): version for name, version in PIN.findall(text)}


def normalized(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
TESTED = pins((ROOT / "deploy" / "requirements.lock").read_text())


def test_a_lock_for_each_python_the_project_supports():
    assert sorted(p.name for p in (ROOT / "deploy" / "locks").glob("runtime-py*.txt")) == [
        f"runtime-py{v}.txt" for v in PYTHONS
    ]
    assert PROJECT["requires-python"] == ">=3.11"


@pytest.mark.parametrize("python", PYTHONS)
def test_each_lock_holds_the_runtime_alone_every_pin_hashed_at_the_tested_versions(python):
    text = (ROOT / "deploy" / "locks" / f"runtime-py{python}.txt").read_text()
    assert text.startswith(
        f"# DS Portal {PROJECT['version']}: the hub's and the sessions' packages for Python {python}"
    )
    locked = pins(text)
    # every requirement line is a pin followed by its hashes, nothing else (pip --require-hashes installs it)
    entries = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text.split("\n", 3)[3].strip())
    assert len(entries) == len(locked) and all("--hash=sha256:" in entry for entry in entries)
    assert {normalized(r) for r in PROJECT["dependencies"]} <= set(locked)
    for extra in ("test", "docs", "frameworks", "apps"):  # none of the extras' own packages
        assert {normalized(r) for r in PROJECT["optional-dependencies"][extra]} & set(locked) == set(), extra
    # what the tests ran, where they ran it: spawner/*/upstream_*.py checks private names of these versions
    assert {n: v for n, v in locked.items() if n in TESTED and TESTED[n].split("+")[0] != v} == {}


@pytest.mark.parametrize("python", PYTHONS)
def test_each_frameworks_lock_adds_torch_and_tensorflow_at_the_runtime_locks_versions(python):
    """deploy/locks/frameworks-pyX.Y.txt installs after runtime-pyX.Y.txt into the same venv: every package both
    hold is at the same version, so the second install changes nothing of the first."""
    text = (ROOT / "deploy" / "locks" / f"frameworks-py{python}.txt").read_text()
    assert text.startswith(
        f"# DS Portal {PROJECT['version']}: PyTorch and TensorFlow, PyPI's CUDA builds, for Python {python}"
    )
    frameworks = pins(text)
    runtime = pins((ROOT / "deploy" / "locks" / f"runtime-py{python}.txt").read_text())
    assert {"torch", "tensorflow"} <= set(frameworks)
    assert any(name.startswith("nvidia-") for name in frameworks)  # the CUDA libraries come with the wheels
    assert {n: (v, runtime[n]) for n, v in frameworks.items() if n in runtime and runtime[n] != v} == {}
    entries = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text.split("\n", 3)[3].strip())
    assert len(entries) == len(frameworks) and all("--hash=sha256:" in entry for entry in entries)

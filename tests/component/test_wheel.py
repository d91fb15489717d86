"""The package installs like any Jupyter package: a wheel built from a clean checkout carries the
JupyterLab extension, and an environment it is installed into lists it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from deploy.dev.release import npm_version

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXTENSION = "share/jupyter/labextensions/dsportal/package.json"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def clean_checkout(target: Path) -> Path:
    """The project's files as git has them (tracked, and new files not ignored): no built extension."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_a_wheel_from_a_clean_checkout_carries_the_extension(tmp_path):
    source = clean_checkout(tmp_path / "src")
    assert not (source / "spawner/labext/dist").exists()
    # without build isolation the build's tools (jlpm and jupyter-builder) come from this environment
    built = subprocess.run(
        [
            str(BIN / "pip"),
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(tmp_path / "wheels"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"},
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [wheel] = (tmp_path / "wheels").glob("dsportal-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/data/" + EXTENSION) for n in names), [n for n in names if ".data/" in n]

    env = tmp_path / "env"
    installed = subprocess.run(
        [
            str(BIN / "pip"),
            "install",
            "--no-deps",
            "--ignore-installed",
            "--disable-pip-version-check",
            "--prefix",
            str(env),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    data = env / "share" / "jupyter"
    assert (data / EXTENSION.removeprefix("share/jupyter/")).is_file()
    listing = subprocess.run(
        [str(BIN / "jupyter"), "labextension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "JUPYTER_PATH": str(data), "HOME": str(tmp_path)},
    )
    out = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)  # without its colours
    section = out.split(str(data / "labextensions"), 1)
    assert len(section) == 2, out  # the fresh environment's folder is listed...
    # ...with it, at the project's version, as a Python package's
    # (in npm's spelling of the version: 0.2.0-dev.0 for 0.2.0.dev0)
    assert f"dsportal v{npm_version(VERSION)} enabled OK (python, dsportal)" in section[1].split("\n\n")[0], out

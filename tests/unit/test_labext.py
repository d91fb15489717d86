"""The JupyterLab extension (spawner/labext) passes its own checks, run with jlpm as the extension template
runs them: jest's unit tests of its logic, the type checker, ESLint and Prettier; and it is named and
versioned for the portal.  They need spawner/labext/node_modules: `deploy/devcluster up` installs it, or
`jlpm install` in spawner/labext (fix lint with `jlpm lint` there)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LABEXT = ROOT / "spawner" / "labext"
BIN = Path(sys.executable).parent
JLPM = BIN / "jlpm"  # JupyterLab's yarn, from jupyter-builder, beside this Python


def jlpm(script: str) -> subprocess.CompletedProcess:
    assert JLPM.exists(), f"{JLPM} is missing: install jupyter-builder (pip install 'jupyter-builder>=1.2,<2')"
    assert (LABEXT / "node_modules").is_dir(), (
        "spawner/labext/node_modules is missing: `deploy/devcluster up` installs it, or run `jlpm install` there"
    )
    return subprocess.run(
        [str(JLPM), script],
        cwd=LABEXT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "CI": "1", "FORCE_COLOR": "0"},
    )


def test_the_extension_logic_passes_its_unit_tests():
    result = jlpm("test")
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"jlpm test (jest) failed in spawner/labext:\n{out[-6000:]}"
    assert re.search(r"Tests:\s+(\d+) passed, \1 total", out), out[-3000:]  # every test ran, and passed


def test_the_extension_type_checks():
    result = jlpm("typecheck")
    assert result.returncode == 0, f"jlpm typecheck (tsc) failed in spawner/labext:\n{result.stdout}{result.stderr}"


def test_the_extension_passes_eslint():
    result = jlpm("eslint:check")
    assert result.returncode == 0, (
        f"jlpm eslint:check failed in spawner/labext; `jlpm eslint` fixes most:\n{result.stdout}{result.stderr}"
    )


def test_the_extension_is_formatted_by_prettier():
    result = jlpm("prettier:check")
    assert result.returncode == 0, (
        f"jlpm prettier:check failed in spawner/labext; run `jlpm prettier` there:\n{result.stdout}{result.stderr}"
    )


def test_the_extension_is_named_and_versioned_for_the_portal():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package = json.loads((LABEXT / "package.json").read_text())
    install = json.loads((LABEXT / "install.json").read_text())
    shared = project["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert package["name"] == "dsportal"
    # `jupyter labextension list` shows it: npm's spelling of the same version (0.2.0-dev.0 for 0.2.0.dev0)
    assert Version(package["version"]) == Version(project["project"]["version"])
    assert shared["spawner/labext/dist"] == f"share/jupyter/labextensions/{package['name']}"
    assert shared["spawner/labext/install.json"] == f"share/jupyter/labextensions/{package['name']}/install.json"
    assert install["packageName"] == project["project"]["name"]

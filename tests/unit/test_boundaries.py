"""Where code runs is a boundary: the node side loads no hub code, the hub side no node code.

Statically with import-linter (the contracts in pyproject.toml), and at run
time by importing each side's entry point in a fresh interpreter and looking
at what it loaded.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_import_contracts_are_kept():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in result.stdout  # every contract of pyproject.toml was checked


def imported_modules(path: Path) -> set[str]:
    """The top-level module of every import in a file; a relative import counts as '.' (it is the project's)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else node.module.split(".")[0])
    return found


def test_slurm_vocabulary_imports_the_standard_library_only():
    # every side imports it: the root helper, the user's server on the node, the hub, `dsportal doctor`
    imported = imported_modules(ROOT / "spawner" / "slurmvocab.py")
    assert "re" in imported  # the walk sees the imports at all
    assert imported - sys.stdlib_module_names == {"."}  # its GRES half only (below)
    assert "from .slurmgres import" in (ROOT / "spawner" / "slurmvocab.py").read_text()
    assert imported_modules(ROOT / "spawner" / "slurmgres.py") - sys.stdlib_module_names == set()


def loaded_by(module: str) -> set[str]:
    """Every module a fresh interpreter has loaded after importing `module`."""
    code = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout))


def under(modules: set[str], *packages: str) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


# dsportal-singleuser imports JupyterHub's own single-user server only when it starts it (and that,
# like the stock jupyterhub-singleuser, loads parts of JupyterHub): the portal's node code loads none.
@pytest.mark.parametrize(
    "entry", ["spawner.jupyter.singleuser", "spawner.job.kernels.modulekernel", "spawner.jupyter.extension"]
)
def test_node_side_entry_points_load_no_hub_code(entry):
    loaded = loaded_by(entry)
    assert (
        under(loaded, "batchspawner", "jupyterhub.spawner", "jupyterhub.auth", "ldap3", "portal", "spawner.hub")
        == set()
    )


@pytest.mark.parametrize("entry", ["spawner.hub.session.spawner", "portal.auth", "spawner.hub.wiring.hubconfig"])
def test_hub_side_loads_no_node_code_and_no_tensorboard(entry):
    loaded = loaded_by(entry)
    assert under(loaded, "spawner.job", "spawner.jupyter", "tensorboard") == set()


def test_spawner_and_authenticator_are_jupyterhub_entry_points():
    from jupyterhub.app import JupyterHub

    from portal.auth import PortalLDAPAuthenticator
    from spawner.hub.session.spawner import SlurmGPUSpawner

    by_name = JupyterHub(spawner_class="dsportal", authenticator_class="dsportal")
    assert (by_name.spawner_class, by_name.authenticator_class) == (SlurmGPUSpawner, PortalLDAPAuthenticator)
    dotted = JupyterHub(
        spawner_class="spawner.hub.session.spawner.SlurmGPUSpawner",
        authenticator_class="portal.auth.PortalLDAPAuthenticator",
    )
    assert (dotted.spawner_class, dotted.authenticator_class) == (SlurmGPUSpawner, PortalLDAPAuthenticator)

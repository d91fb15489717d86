"""The user's layer of their own packages (spawner/job/kernels/userlayer.py): a real virtualenv made in a temporary
home, pip installing a wheel into it with no index, the portal's python unaffected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spawner.job.kernels.kernelspecs import SESSION_KERNEL_ARGS
from spawner.job.kernels.userlayer import PTH, ensure_layer, layer_dir, portal_site_packages, pth_text, site_packages
from spawner.job.runs.runner import run_kernel
from tests.support.wheels import write_wheel

PORTAL_SITES = portal_site_packages()


def python(executable: Path | str, code: str) -> str:
    out = subprocess.run([str(executable), "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_one_layer_per_python_version_and_its_pth_line():
    assert layer_dir(Path("/home/a"), (3, 11)) == Path("/home/a/.local/share/dsportal/python3.11")
    assert pth_text(["/opt/p/lib/python3.11/site-packages"]) == (
        "import site; site.addsitedir('/opt/p/lib/python3.11/site-packages')\n"
    )


def test_the_layer_sees_the_portals_packages_and_pip_installs_into_it_first(tmp_path):
    home = tmp_path / "home"
    layer_python = ensure_layer(home, sys.executable, PORTAL_SITES)
    layer = layer_dir(home)
    assert layer_python == layer / "bin" / "python"
    # the portal's packages, found through the layer's .pth; the layer is the kernel's prefix (pip's target)
    assert python(layer_python, "import sys, yaml; print(sys.prefix)") == str(layer)
    # pip (the portal's) installs a wheel into the layer: no index, no network
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    hello = write_wheel(wheels, "dsportal-hello", "1.0", {"dsportal_hello.py": "WORDS = 'hello from alice'\n"})
    # a package named as one of the portal's: the layer's comes first for the layer's python only
    shadow = write_wheel(wheels, "dsportal-shadow", "1.0", {"yaml.py": "SHADOW = True\n"})
    installed = subprocess.run(
        [str(layer_python), "-m", "pip", "install", "--no-index", "--no-deps", str(hello), str(shadow)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    assert (site_packages(layer) / "dsportal_hello.py").is_file()
    assert python(layer_python, "import dsportal_hello; print(dsportal_hello.WORDS)") == "hello from alice"
    assert python(layer_python, "import yaml; print(yaml.SHADOW)") == "True"
    # the portal's own python (the session's server) sees none of it
    assert python(sys.executable, "import importlib.util as u; print(u.find_spec('dsportal_hello'))") == "None"
    assert python(sys.executable, "import yaml; print(hasattr(yaml, 'SHADOW'))") == "False"


def test_a_second_start_keeps_the_layer_and_follows_a_moved_portal(tmp_path):
    home = tmp_path / "home"
    ensure_layer(home, sys.executable, PORTAL_SITES)
    kept = site_packages(layer_dir(home)) / "mine.py"
    kept.write_text("X = 1\n")
    ensure_layer(home, sys.executable, ["/opt/elsewhere/site-packages", *PORTAL_SITES])
    assert kept.read_text() == "X = 1\n"  # nothing of the user's is lost
    assert (site_packages(layer_dir(home)) / PTH).read_text() == pth_text(
        ["/opt/elsewhere/site-packages", *PORTAL_SITES]
    )


def test_a_run_uses_the_layer_where_the_user_has_one(tmp_path):
    home = tmp_path / "home"
    assert run_kernel(home)["python3"]["argv"] == [sys.executable, *SESSION_KERNEL_ARGS]
    ensure_layer(home, sys.executable, PORTAL_SITES)
    assert run_kernel(home)["python3"]["argv"] == [str(layer_dir(home) / "bin" / "python"), *SESSION_KERNEL_ARGS]


def test_a_module_in_the_home_does_not_take_the_layers_making(tmp_path, monkeypatch):
    # the job starts in the home: a shutil.py there ran instead of the standard library's (python -m venv puts the
    # current folder first on sys.path); -I leaves it out
    home = tmp_path / "home"
    home.mkdir()
    (home / "shutil.py").write_text("raise SystemExit('PLANTED')\n")
    (home / "types.py").write_text("raise SystemExit('PLANTED')\n")
    monkeypatch.chdir(home)
    layer_python = ensure_layer(home, sys.executable, PORTAL_SITES)
    assert python(layer_python, "import sys; print(sys.prefix)") == str(layer_dir(home))


def test_a_layer_whose_python_moved_is_repaired(tmp_path):
    home = tmp_path / "home"
    layer_python = ensure_layer(home, sys.executable, PORTAL_SITES)
    for link in layer_python.parent.glob("python*"):  # the base Python moved: every link points nowhere
        link.unlink()
        link.symlink_to(tmp_path / "gone" / "python3")
    assert not layer_python.exists()
    assert ensure_layer(home, sys.executable, PORTAL_SITES) == layer_python
    assert python(layer_python, "import sys; print(sys.prefix)") == str(layer_dir(home))


def test_a_layer_that_cannot_be_made_says_why(tmp_path):
    home = tmp_path / "home"
    (home / ".local" / "share").mkdir(parents=True)
    (home / ".local" / "share" / "dsportal").write_text("a file where the folder goes\n")
    with pytest.raises(OSError):
        ensure_layer(home, sys.executable, PORTAL_SITES)

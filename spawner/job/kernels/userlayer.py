"""The user's own Python packages: a layer in their home that their Python 3 kernels see on top of the portal's.

The portal's environment is read-only to users (it lives on shared storage, installed by the admins), so
`%pip install X` in a notebook failed, and `pip install --user` is refused in any virtualenv.  Each user gets
one more environment of their own, `~/.local/share/dsportal/python3.N` (one per Python version: packages
built for 3.11 do not load in 3.12): a virtualenv without packages of its own at first, whose
`_dsportal_portal.pth` adds the portal's site-packages after its own (`site.addsitedir`, so the portal's .pth
files still run).  The session's Python 3 kernel runs with this layer's python, so in a notebook:

- `%pip install X` (IPython's magic runs `sys.executable -m pip`) installs into the layer, kept across sessions;
- a package of the layer comes first: `%pip install -U X` of a package the portal has gives the user theirs
  (pip leaves the portal's copy alone: "outside environment"), and the portal's stays as it was for everyone;
- the session's Jupyter server runs with the portal's own python, which never sees the layer: nothing a user
  installs can break the server that shows their notebooks (a package that breaks their kernel is undone with
  `pip uninstall` in a terminal, or by removing the folder; the docs say so).

Only the layer's owner can write it (their home); another user's kernel never reads it.  Made or repaired at
each session start in the background with the kernelspecs (`python -m venv --without-pip`: about 30 ms); a run
refreshes the .pth of a layer the user has.  A package of the user's that replaces the portal's ipykernel may
keep the launcher from moving ipykernel's subprocess pipe off TCP: the kernel then says so in the session log.
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

PTH = "_dsportal_portal.pth"
VENV_TIMEOUT = 60


def portal_site_packages() -> list[str]:
    """The running (portal's) python's site-packages folders that exist: what a layer's .pth adds."""
    return [p for p in site.getsitepackages() if Path(p).is_dir()]


def layer_dir(home: Path, version: tuple[int, int] = sys.version_info[:2]) -> Path:
    """~/.local/share/dsportal/python3.11: one layer per Python version."""
    return home / ".local" / "share" / "dsportal" / f"python{version[0]}.{version[1]}"


def pth_text(portal_sites: list[str]) -> str:
    """The .pth line that puts the portal's site-packages after the layer's own, with their .pth files run."""
    return "import site; " + "; ".join(f"site.addsitedir({site!r})" for site in portal_sites) + "\n"


def site_packages(layer: Path, version: tuple[int, int] = sys.version_info[:2]) -> Path:
    return layer / "lib" / f"python{version[0]}.{version[1]}" / "site-packages"


def ensure_layer(home: Path, portal_python: str, portal_sites: list[str]) -> Path:
    """The layer's python, the layer made if missing (or repaired: its python's link broken by a Python that
    moved) and pointed at the portal's site-packages.  OSError when it cannot be made: the kernel then runs with
    the portal's python."""
    layer = layer_dir(home)
    python = layer / "bin" / "python"
    if not (layer / "pyvenv.cfg").is_file() or not python.exists():
        layer.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for link in (layer / "bin").glob("python*"):  # venv keeps an existing link, broken or not
            if link.is_symlink():
                link.unlink()
        # -I: not the home's (the job's folder's) own modules: a shutil.py or types.py there would run instead
        # of the standard library's.  --without-pip: pip is the portal's (through the .pth); the layer holds
        # only what the user adds
        made = subprocess.run(
            [portal_python, "-I", "-m", "venv", "--without-pip", str(layer)],
            capture_output=True,
            text=True,
            timeout=VENV_TIMEOUT,
        )
        if made.returncode != 0 or not python.exists():
            raise OSError(f"python -m venv {layer} failed: {(made.stderr or made.stdout).strip()[-300:]}")
    pth = site_packages(layer) / PTH
    text = pth_text(portal_sites)
    if not pth.is_file() or pth.read_text() != text:  # an upgrade of the portal may move its environment
        pth.parent.mkdir(parents=True, exist_ok=True)
        pth.write_text(text)
    return layer / "bin" / "python"

"""The logos of the kernels a session's own kernelspecs replace, copied beside them.

A session's "python3" and "ir" take the place of the environment's and the
system's kernelspecs of those names (the session's folder is first on
JUPYTER_PATH).  Copied, their logos stay on the launcher's Python 3 and R
cards, and a page that listed the stock kernels before the session's were
written still finds the logo files it was told of.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from jupyter_core.paths import jupyter_path

from .userkernels import user_kernels_dir


def server_kernel_dirs(data_kernel_dirs: list[str], home: str, user_dir: str) -> list[str]:
    """The kernels folders the session's server searches, in its order, from Jupyter's own list of this process:
    none under the home but the user's own kernels, last (spawner/job/kernels/userkernels.py)."""
    home_prefix = home.rstrip("/") + "/"
    return [d for d in data_kernel_dirs if not d.startswith(home_prefix)] + [user_dir]


def stock_logos(names: Iterable[str], kernel_dirs: list[str]) -> dict[str, list[Path]]:
    """{name: the logo files (logo-*) of the kernel of that name that the server would find first}."""
    logos: dict[str, list[Path]] = {}
    for name in names:
        found = next((Path(d, name) for d in kernel_dirs if Path(d, name, "kernel.json").is_file()), None)
        if found is not None:
            logos[name] = sorted(p for p in found.glob("logo-*") if p.is_file())
    return logos


def copy_stock_logos(kernels_dir: Path, home: str) -> None:
    """Copy into each kernel folder of `kernels_dir` the logos of the stock kernel of its name (if any)."""
    dirs = server_kernel_dirs(jupyter_path("kernels"), home, user_kernels_dir())
    names = [p.name for p in kernels_dir.iterdir() if p.is_dir()]
    for name, files in stock_logos(names, dirs).items():
        for logo in files:
            shutil.copyfile(logo, kernels_dir / name / logo.name)

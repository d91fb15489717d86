"""What `up` built from locked inputs, kept by `reset` and put back by the next `up` (a rename, not a rebuild).

`reset` exists so that a setup step that works only on a warm machine fails
in CI; rebuilding what a lock pins exactly proves nothing more, and costs
minutes (the venv's 4 GB of wheels, code-server's native modules, the
container image's debootstrap).  So `reset` moves those builds into BUILT,
and `up` moves them back before it checks them: each one is still checked
against its inputs (the venv against deploy/requirements.lock's hash,
code-server and the proxy against their package-lock.json, the image against
its recipe) and rebuilt when they changed.  The portal itself is never kept:
`up` installs it afresh from the checkout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .common import BUILT, PREFIX, say

# the builds in PREFIX that deploy/devcluster (bash) makes and checks; the image is images.py's
PREFIX_BUILDS = ("venv", "code-server", "proxy")


def keep(path: Path, name: str) -> None:
    """`reset`: move the build at `path` to BUILT/name, replacing an older one (nothing if there is none)."""
    if not path.exists() or path.is_symlink():
        return
    BUILT.mkdir(mode=0o700, parents=True, exist_ok=True)
    kept = BUILT / name
    if kept.is_dir():
        shutil.rmtree(kept)
    kept.unlink(missing_ok=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, kept)  # a rename on one file system
    say(f"kept the build {path} for the next up ({kept})")


def restore(path: Path, name: str) -> bool:
    """`up`: put BUILT/name back at `path` when nothing is there; True if it did (the caller still checks it)."""
    kept = BUILT / name
    if path.exists() or not kept.exists():
        return False
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    shutil.move(kept, path)
    return True


def restore_prefix_builds() -> None:
    for name in PREFIX_BUILDS:
        if restore(PREFIX / name, name):
            say(f"put back the build {PREFIX / name} an earlier reset kept (checked against its lock next)")


def keep_prefix_builds() -> None:
    """`reset`: the venv (without the portal's stamp: the next `up` installs the portal again), code-server, the proxy."""
    (PREFIX / "source.sha256").unlink(missing_ok=True)
    for name in PREFIX_BUILDS:
        keep(PREFIX / name, name)

"""The dev cluster's real container image: a Debian 12 root with Python 3, ipykernel and numpy (for Charliecloud).

Built once with debootstrap from the Debian mirror and kept across runs on
the same machine (a stamp holds the recipe's hash); its packages stay in
CACHE, so a rebuild after `deploy/devcluster reset` downloads nothing.  A marker file names the
image, so a test can show a kernel runs inside it; the storage mount points
exist in it, since ch-run cannot create them in a read-only image.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

# standard library only, like the dev cluster's own code
from portal.admin.imagesafety import make_unprivileged

from . import builds
from .common import CACHE, run, say

IMAGES = Path("/opt/containers")
NAME = "debian-py"
IMAGE = IMAGES / NAME
MIRROR = os.environ.get("DSPORTAL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PACKAGES = ["python3-ipykernel", "python3-numpy"]
MOUNT_POINTS = ["/mnt/isilon"]  # the dev config's storage (environment.storage)
MARKER = "/dsportal-image"


def recipe() -> str:
    # 2: built without setuid/setgid programs and device nodes
    return hashlib.sha256(repr(("bookworm", PACKAGES, MOUNT_POINTS, MARKER, NAME, 2)).encode()).hexdigest()


def stamp_file() -> Path:
    return IMAGES / f".{NAME}.recipe"


def remove_foreign(root: Path) -> list[str]:
    """Remove what under `root` is not root's (files a user put in a folder an older build left open); never follows
    a link.  Returns what it removed."""
    removed = []
    for folder, dirs, files in os.walk(root):
        for name in list(dirs) + files:
            path = os.path.join(folder, name)
            if os.lstat(path).st_uid == 0:
                continue
            if name in dirs and not os.path.islink(path):
                dirs.remove(name)
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(path)
    return removed


def keep_built() -> None:
    """`reset`: the image and its recipe's stamp kept for the next `up` (builds.py), as it was built: anything a user
    put in it since is removed and no folder is left open to them (an image kept from before they were closed)."""
    if IMAGE.is_dir() and not IMAGE.is_symlink():
        for path in remove_foreign(IMAGE):
            say(f"removed {path} from the kept image: not root's")
        make_unprivileged(IMAGE)
    builds.keep(stamp_file(), f"image/{stamp_file().name}")
    builds.keep(IMAGE, f"image/{NAME}")


def ensure_dev_image() -> None:
    stamp = stamp_file()
    if builds.restore(stamp, f"image/{stamp.name}") | builds.restore(IMAGE, f"image/{NAME}"):
        IMAGES.chmod(0o755)
    if IMAGE.is_dir() and stamp.exists() and stamp.read_text() == recipe():
        return
    IMAGES.mkdir(mode=0o755, parents=True, exist_ok=True)
    build = IMAGES / f".{NAME}.building"
    shutil.rmtree(build, ignore_errors=True)
    say(f"building the container image {IMAGE} (debootstrap from {MIRROR}; once per machine)")
    started = time.monotonic()
    base, extra = CACHE / "debootstrap", CACHE / "image-debs"  # kept by `reset`: a rebuild downloads nothing
    base.mkdir(parents=True, exist_ok=True)
    extra.mkdir(parents=True, exist_ok=True)
    run(["debootstrap", "--variant=minbase", f"--cache-dir={base}", "bookworm", str(build), MIRROR], timeout=900)
    archives = build / "var" / "cache" / "apt" / "archives"
    for deb in extra.glob("*.deb"):
        shutil.copy2(deb, archives)
    run(
        ["chroot", str(build), "apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
        timeout=900,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )
    for deb in archives.glob("*.deb"):
        shutil.copy2(deb, extra)
    run(["chroot", str(build), "apt-get", "clean"])
    shutil.rmtree(build / "var" / "lib" / "apt" / "lists", ignore_errors=True)
    (build / "etc" / "hosts").touch()  # ch-run binds the node's /etc/hosts and /etc/resolv.conf over these
    (build / "etc" / "resolv.conf").touch()
    for point in MOUNT_POINTS:
        (build / point.lstrip("/")).mkdir(parents=True, exist_ok=True)
    (build / MARKER.lstrip("/")).write_text(f"{NAME}\n")
    make_unprivileged(build)  # no setuid-root program or device node on storage every user reads
    run(["chmod", "-R", "a+rX", str(build)])
    shutil.rmtree(IMAGE, ignore_errors=True)
    build.rename(IMAGE)
    stamp.write_text(recipe())
    size = run(["du", "-sm", str(IMAGE)]).stdout.split()[0]
    say(f"built {IMAGE} in {time.monotonic() - started:.0f} s ({size} MB)")

"""The release's container image of the hub: Debian 12 with the release's runtime lock and wheel, as an OCI archive.

Built without a container engine, by tools Debian ships: debootstrap makes the root (Python 3.11, sudo, the
service account `dsportal` as install step 1 makes it), pip installs the lock with its hashes and the wheel into
/opt/dsportal/venv as install step 2 does, umoci packs the root as one layer with the hub unit's command and user,
and skopeo writes `dsportal-hub-VERSION.oci.tar` (`podman load -i`, `skopeo copy oci-archive:...` to a registry,
`apptainer build hub.sif oci-archive://...`).

The image holds no secret and no site file: /etc/dsportal (the admin file, hub.env, the TLS files) and
/var/lib/dsportal (the database, the cookie secret) are volumes, and Slurm's client and munge's socket are the
site's, bound in (docs/admins/install.md says which).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from . import platform
from .common import CACHE, STATE, ClusterError, run, say

SUITE = "bookworm"  # Debian 12: its python3 is 3.11, the lock used below
PYTHON = "3.11"
PACKAGES = ("python3", "python3-venv", "sudo", "ca-certificates", "passwd", "openssl")
WORK = STATE / "release-image"  # root's alone (0700): the root is built here before it is packed
PIP_CACHE = CACHE / "pip-hubimage"  # downloads, kept by `reset`: a second build downloads nothing
IN_ROOT = "/tmp/release"  # where the lock, the wheel and the CA bundle lie while pip runs in the root
PREFIX = "/opt/dsportal/venv"
# the service account's uid and gid in the image, fixed: the hub's state and the munge socket are the host's, so the
# head node's `dsportal` must be the same number (docs: admins/releases), not whatever useradd found free here
ACCOUNT_ID = 990


def config_argv(layout: str, version: str) -> list[str]:
    """umoci's flags for the image's config: the hub unit's command, user and environment (pure)."""
    return [
        "umoci",
        "config",
        "--image",
        f"{layout}:{version}",
        "--config.user",
        "dsportal",
        "--config.workingdir",
        "/var/lib/dsportal",
        "--config.env",
        f"PATH={PREFIX}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "--config.env",
        "DSPORTAL_CONFIG=/etc/dsportal/portal.yaml",
        "--config.entrypoint",
        f"{PREFIX}/bin/jupyterhub",
        "--config.cmd",
        "-f",
        "--config.cmd",
        "/etc/dsportal/jupyterhub_config.py",
        "--config.exposedports",
        "8000/tcp",
        "--config.volume",
        "/etc/dsportal",
        "--config.volume",
        "/var/lib/dsportal",
        "--config.label",
        f"org.opencontainers.image.version={version}",
        "--config.label",
        "org.opencontainers.image.title=DS Portal hub",
    ]


def pip_env() -> dict[str, str]:
    """pip's environment in the root: this machine's CA bundle (a site's proxy may sign PyPI's certificate), the
    kept download cache, nothing of this machine's own pip settings (its local wheel folders)."""
    return {
        "PATH": f"{PREFIX}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "PIP_CERT": f"{IN_ROOT}/ca.crt",
        "PIP_CACHE_DIR": f"{IN_ROOT}/cache",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_DEFAULT_TIMEOUT": "180",
    }


def _make_root(rootfs: Path) -> None:
    platform.debootstrap(SUITE, rootfs, include=PACKAGES)
    run(["chroot", str(rootfs), "groupadd", "--system", "--gid", str(ACCOUNT_ID), "dsportal"])
    account = ["useradd", "--system", "--uid", str(ACCOUNT_ID), "--gid", "dsportal", "--home-dir", "/var/lib/dsportal"]
    run(["chroot", str(rootfs), *account, "--shell", "/usr/sbin/nologin", "dsportal"])
    run(["chroot", str(rootfs), "install", "-d", "-m", "0700", "-o", "dsportal", "-g", "dsportal", "/var/lib/dsportal"])
    run(["chroot", str(rootfs), "install", "-d", "-m", "0755", "/etc/dsportal", "/mnt/isilon"])


def _install(rootfs: Path, wheel: Path, locks: Path) -> None:
    lock = locks / f"runtime-py{PYTHON}.txt"
    stage = rootfs / IN_ROOT.lstrip("/")
    (stage / "cache").mkdir(parents=True)
    shutil.copy2(lock, stage / lock.name)
    shutil.copy2(wheel, stage / wheel.name)
    shutil.copy2("/etc/ssl/certs/ca-certificates.crt", stage / "ca.crt")
    resolv = rootfs / "etc/resolv.conf"
    shutil.copy2("/etc/resolv.conf", resolv)
    PIP_CACHE.mkdir(mode=0o700, parents=True, exist_ok=True)
    run(["mount", "--bind", str(PIP_CACHE), str(stage / "cache")])
    try:
        env, chroot = pip_env(), ["chroot", str(rootfs)]
        run([*chroot, "/usr/bin/python3", "-m", "venv", PREFIX], env=env, timeout=300)
        pip = [*chroot, f"{PREFIX}/bin/pip", "install", "-q"]
        run([*pip, "--require-hashes", "-r", f"{IN_ROOT}/{lock.name}"], env=env, timeout=1800)
        run([*pip, "--no-deps", f"{IN_ROOT}/{wheel.name}"], env=env, timeout=300)
        version = run([*chroot, f"{PREFIX}/bin/dsportal", "--version"], env=env).stdout.strip()
        say(f"the image's hub says: {version}")
    finally:
        run(["umount", str(stage / "cache")])  # before anything is removed: the cache is a download, kept
    shutil.rmtree(stage)
    resolv.write_text("")  # the runtime binds the host's
    # nothing of the machine that built it: its name, its hosts, its mirror (which may hold a password), its log
    (rootfs / "etc/hostname").write_text("")
    (rootfs / "etc/hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
    (rootfs / "etc/apt/sources.list").write_text(f"deb http://deb.debian.org/debian {SUITE} main\n")
    (rootfs / "var/log/bootstrap.log").unlink(missing_ok=True)
    for leftover in ["var/cache/apt/archives", "var/lib/apt/lists"]:
        run(["find", str(rootfs / leftover), "-type", "f", "-delete"])
    # no device nodes (the runtime makes /dev); set-id bits only on sudo, which the hub runs
    run(["find", str(rootfs), "-xdev", "(", "-type", "c", "-o", "-type", "b", ")", "-delete"])
    run(
        [
            "find",
            str(rootfs),
            "-xdev",
            "-type",
            "f",
            "-perm",
            "/6000",
            "!",
            "-path",
            "*/bin/sudo",
            "-exec",
            "chmod",
            "ug-s",
            "{}",
            "+",
        ]
    )


def _pack(rootfs: Path, version: str, archive: Path) -> None:
    layout, bundle = WORK / "layout", WORK / "bundle"
    run(["umoci", "init", "--layout", str(layout)])
    run(["umoci", "new", "--image", f"{layout}:{version}"])
    run(["umoci", "unpack", "--image", f"{layout}:{version}", str(bundle)], timeout=300)
    shutil.rmtree(bundle / "rootfs")
    rootfs.rename(bundle / "rootfs")
    run(["umoci", "repack", "--image", f"{layout}:{version}", str(bundle)], timeout=1200)
    run(config_argv(str(layout), version))
    run(["umoci", "gc", "--layout", str(layout)], timeout=300)
    run(["skopeo", "copy", "-q", f"oci:{layout}:{version}", f"oci-archive:{archive}:{version}"], timeout=600)


def build(wheel: Path, locks: Path, version: str, archive: Path) -> Path:
    if shutil.which("umoci") is None or shutil.which("skopeo") is None:
        raise ClusterError("the hub's image needs umoci and skopeo (Debian's packages): run `deploy/devcluster up`")
    if WORK.exists():  # of a build that stopped half-way: made anew, never through what is still mounted there
        platform.remove_tree(WORK)
    WORK.mkdir(mode=0o700, parents=True)
    rootfs = WORK / "rootfs"
    say(f"building the hub's image (debootstrap {SUITE}, the runtime lock for Python {PYTHON}, umoci; minutes)")
    try:
        _make_root(rootfs)
        _install(rootfs, wheel, locks)
        _pack(rootfs, version, archive)
    finally:
        try:
            platform.remove_tree(WORK)  # never through a bound folder
        except ClusterError as e:  # the build's own failure, if any, is the one to tell
            say(str(e))
    size = os.path.getsize(archive) // (1 << 20)
    say(f"the hub's image: {archive.name} ({size} MB)")
    return archive

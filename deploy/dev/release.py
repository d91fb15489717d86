"""`deploy/devcluster release [--out DIR] [--no-image]`: one release of DS Portal, built from this checkout.

A release is a folder, `build/release/dsportal-VERSION/` unless --out says otherwise:

- the wheel, with the JupyterLab extension built in (installing it needs no Node.js), and the sdist;
- `deploy/`: the units, the sudoers rule, the example admin file, `jupyterhub_config.py` and the site example, the
  nginx example, the proxy's npm lock, the runtime locks per Python, and the session environment's image
  definitions (Apptainer, and a Dockerfile for Charliecloud's ch-image) with the version written in;
- `INSTALL.md` (docs/admins/install.md, whose steps run in this folder), `UPGRADE.md`, `CHANGELOG.md`, `README.md`;
- the hub's container image, `dsportal-hub-VERSION.oci.tar` (hubimage.py: umoci and skopeo, both Debian's);
- `RELEASE` (the version, the commit, whether the tree had changes) and `SHA256SUMS` over every other file
  (`sha256sum -c SHA256SUMS` checks a copy).

The wheel and the sdist are built with the build tools of the lock (hatchling, hatch-jupyter-builder) in the
portal's environment, without build isolation: nothing is resolved or downloaded while a release is made.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tomllib
import zipfile
from pathlib import Path

from . import hubimage
from .common import VENV, ClusterError, run, say

CHECKOUT = Path(__file__).resolve().parents[2]
DEPLOY_GLOBS = [
    "systemd/*",
    "sudoers.d/*",
    "nginx/*.conf",
    "proxy/package.json",
    "proxy/package-lock.json",
    "locks/*.txt",
    "session/*",
    "portal.example.yaml",
    "jupyterhub_config.py",
    "jupyterhub_config.site-example.py",
]
DOCS = {"INSTALL.md": "docs/admins/install.md", "UPGRADE.md": "docs/admins/upgrade.md"}
TOP = ["CHANGELOG.md", "README.md"]
TEMPLATED = ["session/*"]  # files whose @VERSION@ becomes the release's version
EXTENSION_FILES = ["share/jupyter/labextensions/dsportal/package.json", "share/jupyter/labextensions/dsportal/static/"]


def version(checkout: Path = CHECKOUT) -> str:
    return tomllib.loads((checkout / "pyproject.toml").read_text())["project"]["version"]


def checksums(folder: Path) -> str:
    """`sha256sum`'s lines for every file under `folder` but SHA256SUMS itself, in path order (pure but for
    reading the files)."""
    lines = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "SHA256SUMS"):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {path.relative_to(folder)}\n")
    return "".join(lines)


def npm_version(version_: str) -> str:
    """npm's spelling of a Python version: 0.2.0-dev.0 for 0.2.0.dev0, 0.2.0-rc.1 for 0.2.0rc1 (pure)."""
    match = re.fullmatch(r"(\d+\.\d+\.\d+)(?:\.?(dev|a|b|rc)(\d+))?", version_)
    if not match:
        raise ClusterError(f"pyproject.toml's version {version_!r} is not MAJOR.MINOR.PATCH[.devN|aN|bN|rcN]")
    base, kind, number = match.groups()
    return base if not kind else f"{base}-{kind}.{number}"


def wheel_problems(wheel: Path, version_: str) -> list[str]:
    """What a release's wheel lacks: the JupyterLab extension built in, at this version, and its own version's
    metadata."""
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    data = f"dsportal-{version_}.data/data/"
    problems = [
        f"the wheel has no {want} (the JupyterLab extension is not built in)"
        for want in EXTENSION_FILES
        if not any(n.startswith(data + want) for n in names)
    ]
    if not problems:
        built = json.loads(archive.read(data + EXTENSION_FILES[0]))["version"]
        if built != npm_version(version_):
            problems.append(f"the wheel's JupyterLab extension is version {built}, not {npm_version(version_)}")
    if f"dsportal-{version_}.dist-info/METADATA" not in names:
        problems.append(f"the wheel's metadata is not version {version_}'s")
    return problems


def source_state(checkout: Path) -> tuple[str, bool]:
    """The commit and whether the tree differs from it (a release made from changes no commit holds says so)."""
    commit = run(["git", "-C", str(checkout), "rev-parse", "HEAD"]).stdout.strip()
    changed = bool(run(["git", "-C", str(checkout), "status", "--porcelain"]).stdout.strip())
    return commit, changed


def copy_deploy(checkout: Path, out: Path, version_: str) -> None:
    for pattern in DEPLOY_GLOBS:
        found = sorted((checkout / "deploy").glob(pattern))
        if not found:
            raise ClusterError(f"the release names deploy/{pattern}, which this checkout lacks")
        for source in found:
            target = out / "deploy" / source.relative_to(checkout / "deploy")
            target.parent.mkdir(parents=True, exist_ok=True)
            if any(source.match(t) for t in TEMPLATED):
                target.write_text(source.read_text().replace("@VERSION@", version_))
            else:
                shutil.copy2(source, target)
    for name, source in DOCS.items():
        shutil.copy2(checkout / source, out / name)
    for name in TOP:
        shutil.copy2(checkout / name, out / name)


def build_python(checkout: Path, out: Path, version_: str) -> Path:
    """The wheel and the sdist, from the lock's build tools in the portal's environment."""
    env = {**os.environ, "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    run(
        [str(VENV / "bin/pip"), "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(checkout)],
        timeout=900,
        env=env,
    )
    run([str(VENV / "bin/hatchling"), "build", "-t", "sdist", "-d", str(out)], timeout=300, env=env, cwd=checkout)
    wheel = out / f"dsportal-{version_}-py3-none-any.whl"
    if not wheel.exists() or not (out / f"dsportal-{version_}.tar.gz").exists():
        raise ClusterError(f"the build made {sorted(p.name for p in out.iterdir())}, not version {version_}'s files")
    problems = wheel_problems(wheel, version_)
    if problems:
        raise ClusterError("; ".join(problems) + ": run `deploy/devcluster up` (it builds spawner/labext), then again")
    return wheel


def release(out: Path | None, image: bool) -> Path:
    version_ = version()
    out = out or CHECKOUT / "build" / "release" / f"dsportal-{version_}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    say(f"building release {version_} in {out}")
    wheel = build_python(CHECKOUT, out, version_)
    copy_deploy(CHECKOUT, out, version_)
    if image:
        hubimage.build(wheel, out / "deploy/locks", version_, out / f"dsportal-hub-{version_}.oci.tar")
    commit, changed = source_state(CHECKOUT)
    (out / "RELEASE").write_text(
        f"version {version_}\ncommit {commit}\n" + ("tree changed since that commit\n" if changed else "")
    )
    (out / "SHA256SUMS").write_text(checksums(out))
    say(f"release {version_} is in {out} ({len(checksums(out).splitlines())} files; `sha256sum -c SHA256SUMS`)")
    return out


def main(argv: list[str]) -> int:
    out, image = None, True
    args = list(argv)
    while args:
        word = args.pop(0)
        if word == "--out" and args:
            out = Path(args.pop(0)).resolve()
        elif word == "--no-image":
            image = False
        else:
            print("usage: deploy/devcluster release [--out DIR] [--no-image]", file=sys.stderr)
            return 2
    try:
        release(out, image)
    except ClusterError as e:
        print(f"devcluster: {e}", file=sys.stderr)
        return 1
    return 0

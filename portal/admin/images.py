"""`dsportal images pull`: a registry image (NVIDIA NGC or any other) -> an image a kernel runs, and its YAML.

Apptainer and SingularityCE convert it themselves (`apptainer pull` to a
.sif).  For Charliecloud, skopeo copies the image into an OCI layout and
umoci unpacks it into a directory image that ch-run runs as it is.
Charliecloud's own builder (`ch-image pull` + `ch-convert`) does the same,
but Debian's charliecloud-builders package pulls in docker.io and buildah:
a Docker daemon on the machine where images are made, which an unprivileged
runtime exists to avoid.  skopeo and umoci are two daemonless tools that run
as any account.

This module plans the commands (pure, tested by equality), runs them with
the runtime's progress shown, and turns failures into messages that say what
to do.  The credential reaches the runtime through its environment or a
private authfile that is removed afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .imagesafety import make_unprivileged
from .registry import PASSWORD_ENV, Credential, ImageRef, RefusedRequest, authfile_json, runtime_env

RUNTIMES = ("apptainer", "singularity", "charliecloud")
CHARLIECLOUD_TOOLS = ("skopeo", "umoci")
MIN_FREE_BYTES = 2 * 1024**3
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
AUTHFILE = "{authfile}"  # placeholder in a planned argv, replaced by the private file's path at run time

# (fragments of the tool's output, what to tell the admin); the first match wins.  A fragment matches as
# whole words: "401" must not match inside a blob's hash (sha256:...78401c...), which every output names.
FAILURES = (
    (
        ("no space left on device", "disk quota exceeded"),
        "the disk is full; free space in {dest_dir} (and the runtime's cache and tmp folders) and try again.",
    ),
    (
        ("unauthorized", "authentication required", "401", "incorrect username or password"),
        "{registry} refused the login; check the user and the password (for NGC: create a new API key at "
        "ngc.nvidia.com, Setup > API Key) and try again.",
    ),
    (
        ("manifest unknown", "name unknown", "404", "not found"),
        "{registry} has no image {ref}; check the name and the tag (the registry's web page or "
        "`skopeo list-tags docker://{registry}/{repository}` lists them).",
    ),
    (
        (
            "connection refused",
            "no such host",
            "i/o timeout",
            "network is unreachable",
            "no route to host",
            "tls handshake timeout",
            "certificate signed by unknown authority",
        ),
        "cannot reach {registry}; check the host and the port, this machine's proxy and firewall, and that it "
        "trusts the registry's certificate.",
    ),
)


LOGIN_FAILURE = FAILURES[1][0]


class PullError(RuntimeError):
    """What went wrong and what to do, for the admin."""


@dataclass(frozen=True)
class PullPlan:
    runtime_name: str
    ref: ImageRef
    dest: Path  # the finished image: a .sif file, or a directory image for Charliecloud
    steps: tuple[tuple[str, ...], ...]  # argument lists run in order; AUTHFILE marks the authfile's place
    partial: Path  # where the steps write; renamed to dest only when every step succeeded


def find_tools(requested: str | None, which=shutil.which) -> tuple[str, dict[str, str]]:
    """The runtime's name and the executables its pull needs (name -> path)."""
    for name in [requested] if requested else RUNTIMES:
        needed = CHARLIECLOUD_TOOLS if name == "charliecloud" else (name,)
        paths = {tool: which(tool) for tool in needed}
        if all(paths.values()):
            return name, paths  # type: ignore[return-value]
        if requested:
            missing = [tool for tool, path in paths.items() if not path]
            raise PullError(
                f"{' and '.join(missing)} not installed on this machine; install it (Debian: apt install "
                f"{' '.join(missing)}) and run this again."
            )
    raise PullError(
        "no container tools here: install Apptainer (or SingularityCE), or skopeo and umoci for "
        "Charliecloud, where images are made, then run this again."
    )


def plan_pull(
    ref: ImageRef, dest_dir: Path, runtime_name: str, tools: dict[str, str], work: Path, rootless: bool
) -> PullPlan:
    """The commands that fetch `ref` into `dest_dir`, using the private folder `work`."""
    if runtime_name == "charliecloud":
        dest = dest_dir / ref.file_stem
        layout = f"{work / 'oci'}:{ref.tag}"
        steps = (
            (tools["skopeo"], "copy", "--src-authfile", AUTHFILE, f"docker://{ref}", f"oci:{layout}"),
            (
                tools["umoci"],
                "raw",
                "unpack",
                *(["--rootless"] if rootless else []),
                "--image",
                layout,
                str(work / "image"),
            ),
        )
        return PullPlan(runtime_name, ref, dest, steps, work / "image")
    dest = dest_dir / f"{ref.file_stem}.sif"
    partial = work / dest.name
    return PullPlan(runtime_name, ref, dest, ((tools[runtime_name], "pull", str(partial), f"docker://{ref}"),), partial)


def _says(output: str, fragments: tuple[str, ...]) -> bool:
    return any(re.search(rf"\b{re.escape(f)}\b", output) for f in fragments)


def explain(output: str, plan: PullPlan, anonymous: bool = False) -> str:
    lowered = output.lower()
    if anonymous and _says(lowered, LOGIN_FAILURE):
        return (
            f"{plan.ref.registry} asks for a login; pass --username NAME with the password in "
            f"${PASSWORD_ENV} or --password-file FILE."
        )
    for fragments, message in FAILURES:
        if _says(lowered, fragments):
            return message.format(
                registry=plan.ref.registry, ref=plan.ref, repository=plan.ref.repository, dest_dir=plan.dest.parent
            )
    tail = "\n".join(output.strip().splitlines()[-5:])
    return f"the pull failed:\n{tail}"


def write_authfile(folder: Path, ref: ImageRef, credential: Credential | None) -> Path:
    """skopeo's login for `ref` in `folder`, created 0600 (never readable by others, not even for a moment)."""
    path = folder / "auth.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(authfile_json(ref, credential) if credential else '{"auths": {}}')
    return path


def check_destination(dest_dir: str) -> Path:
    folder = Path(dest_dir)
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise PullError(f"{dest_dir} is not a folder this account can write; create it or choose another --dest.")
    return folder.resolve()


def _run_step(argv: list[str], env: dict[str, str], timeout: float, out: TextIO, secret: str, total: float) -> str:
    """Run one step, echoing its progress; return its output.

    The output is read in a thread so the timeout holds even while the tool
    hangs with its output open; a hung step is killed with all its children.
    """
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def echo() -> None:
        for line in proc.stdout:
            if len(secret) >= 8:  # defence in depth (no tool prints it); a short one would mangle every line
                line = line.replace(secret, "***")
            out.write(line)
            out.flush()
            lines.append(line)
            del lines[:-200]

    reader = threading.Thread(target=echo, name="pull-output", daemon=True)
    reader.start()
    try:
        proc.wait(timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise PullError(f"the pull did not finish within {total:g} s; try again, or raise --timeout.") from None
    finally:
        reader.join(timeout=5)
    text = "".join(lines)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv[0], text)
    return text


def pull(
    ref: ImageRef,
    dest_dir: str,
    requested_runtime: str | None,
    credential: Credential | None,
    timeout: float,
    out: TextIO = sys.stderr,
    which=shutil.which,
) -> PullPlan:
    """Fetch `ref` into `dest_dir`; return the plan that did it (its dest is the image)."""
    folder = check_destination(dest_dir)
    runtime_name, tools = find_tools(requested_runtime, which)
    if shutil.disk_usage(folder).free < MIN_FREE_BYTES:
        print(f"warning: less than {MIN_FREE_BYTES // 1024**3} GB free in {folder}; images are often larger.", file=out)
    # the work folder sits beside the destination: the same file system (a rename, no copy) and no full /tmp
    work = Path(tempfile.mkdtemp(prefix=".dsportal-pull-", dir=folder))
    try:
        plan = plan_pull(ref, folder, runtime_name, tools, work, rootless=os.geteuid() != 0)
        if plan.dest.exists():
            raise PullError(
                f"{plan.dest} already exists; kernels may be using it. Remove it first or choose another --dest."
            )
        authfile = write_authfile(work, ref, credential)
        env = {**os.environ, **runtime_env(runtime_name, credential)}
        deadline = time.monotonic() + timeout
        for step in plan.steps:
            argv = [str(authfile) if a == AUTHFILE else a for a in step]
            try:
                _run_step(
                    argv, env, deadline - time.monotonic(), out, credential.password if credential else "", timeout
                )
            except subprocess.CalledProcessError as e:
                raise PullError(explain(e.output, plan, anonymous=credential is None)) from None
        if plan.partial.is_dir():  # a directory image on shared storage: no way to root from it
            changed = make_unprivileged(plan.partial)
            if changed:
                print(
                    f"made the image unprivileged: {len(changed)} setuid/setgid files and device nodes "
                    "(portal/admin/imagesafety.py)",
                    file=out,
                )
        os.chmod(plan.partial, 0o755 if plan.partial.is_dir() else 0o644)  # every user's session reads it
        digest = image_digest(plan, work)
        os.rename(plan.partial, plan.dest)
        write_digest(plan.dest, digest)
        return plan
    finally:
        shutil.rmtree(work, ignore_errors=True)


def image_digest(plan: PullPlan, work: Path) -> str:
    """What names this image's content, for the receipts of the sessions that use it: the registry's manifest
    digest where the pull kept it (Charliecloud's OCI layout), else the .sif file's own sha256."""
    if plan.runtime_name == "charliecloud":
        try:
            index = json.loads((work / "oci" / "index.json").read_text())
            digest = index["manifests"][0]["digest"]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return ""
        return digest if isinstance(digest, str) and DIGEST.fullmatch(digest) else ""
    sha = hashlib.sha256()
    with plan.partial.open("rb") as image:
        for block in iter(lambda: image.read(1024 * 1024), b""):
            sha.update(block)
    return f"sha256:{sha.hexdigest()}"


def write_digest(dest: Path, digest: str) -> None:
    """IMAGE.digest beside the image (every user's session reads it: spawner/job/receipts/environment.py)."""
    if digest:
        path = dest.parent / f"{dest.name}.digest"
        path.write_text(digest + "\n")
        os.chmod(path, 0o644)


def kernel_yaml(plan: PullPlan) -> str:
    source = "NGC container" if plan.ref.registry == "nvcr.io" else "container"
    return (
        "kernels:\n"
        "  containers:\n"
        f"    - name: {plan.ref.kernel_name}\n"
        f'      display_name: "{plan.ref.label} ({source})"\n'
        f"      image: {plan.dest}\n"
        f"      runtime: {plan.runtime_name}\n"
    )


__all__ = ["PullError", "PullPlan", "RefusedRequest", "find_tools", "kernel_yaml", "plan_pull", "pull"]

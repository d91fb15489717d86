"""`dsportal images pull`: an NVIDIA NGC image -> a .sif file, and the YAML that offers it as a kernel.

The conversion is the container runtime's own (`apptainer pull` or
`singularity pull`); this module checks the request, hands the NGC API key to
the runtime through its environment (never the command line), shows the
runtime's progress and turns its failures into messages that say what to do.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

RUNTIMES = ("apptainer", "singularity")
IMAGE_REF = re.compile(r"nvcr\.io/[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)+:[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NGC_USER = "$oauthtoken"  # NGC's fixed username for API-key logins
MIN_FREE_BYTES = 2 * 1024**3

# (fragment of the runtime's output, what to tell the admin)
FAILURES = (
    (("unauthorized", "authentication required", "401"),
     "NGC refused the API key; create a new one at ngc.nvidia.com (Setup > API Key) and try again."),
    (("manifest unknown", "not found", "404", "name unknown"),
     "NGC has no such image; check the name and tag (e.g. nvcr.io/nvidia/pytorch:24.01-py3)."),
    (("no space left on device",),
     "the disk is full; free space in the destination (and the runtime's cache/tmp folder) and try again."),
)


class PullError(RuntimeError):
    """What went wrong and what to do, for the admin."""


@dataclass(frozen=True)
class PullPlan:
    runtime: str  # the executable's path
    runtime_name: str
    ref: str
    dest: Path

    @property
    def argv(self) -> list[str]:
        return [self.runtime, "pull", str(self.dest), f"docker://{self.ref}"]


def sif_name(ref: str) -> str:
    """'nvcr.io/nvidia/pytorch:24.01-py3' -> 'pytorch_24.01-py3.sif'."""
    return ref.rsplit("/", 1)[1].replace(":", "_") + ".sif"


def kernel_name(ref: str) -> str:
    """'nvcr.io/nvidia/pytorch:24.01-py3' -> 'ngc-pytorch-24.01-py3'."""
    return "ngc-" + re.sub(r"[^a-z0-9_.-]+", "-", ref.rsplit("/", 1)[1].lower().replace(":", "-"))


def credentials_env(runtime_name: str, api_key: str) -> dict[str, str]:
    prefix = runtime_name.upper()
    return {f"{prefix}_DOCKER_USERNAME": NGC_USER, f"{prefix}_DOCKER_PASSWORD": api_key}


def find_runtime(requested: str | None, which=shutil.which) -> tuple[str, str]:
    for name in ([requested] if requested else RUNTIMES):
        path = which(name)
        if path:
            return path, name
    wanted = requested or " or ".join(RUNTIMES)
    raise PullError(f"{wanted} is not installed on this machine; install Apptainer (or SingularityCE) "
                    "where images are built, then run this again.")


def read_api_key(environ, key_file: str | None) -> str:
    if key_file:
        try:
            key = Path(key_file).read_text().strip()
        except OSError as e:
            raise PullError(f"cannot read the API key file {key_file} ({e.strerror}).") from None
    else:
        key = (environ.get("NGC_API_KEY") or "").strip()
    if not key:
        raise PullError("no NGC API key: set NGC_API_KEY or pass --api-key-file FILE "
                        "(create a key at ngc.nvidia.com, Setup > API Key).")
    return key


def plan_pull(ref: str, dest_dir: str, runtime: str | None = None, which=shutil.which) -> PullPlan:
    if not IMAGE_REF.fullmatch(ref):
        raise PullError(f"{ref!r} is not an NGC image name; use the form nvcr.io/nvidia/pytorch:24.01-py3.")
    folder = Path(dest_dir)
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise PullError(f"{dest_dir} is not a folder this account can write; create it or choose another --dest.")
    path, name = find_runtime(runtime, which)
    return PullPlan(runtime=path, runtime_name=name, ref=ref, dest=folder.resolve() / sif_name(ref))


def explain(output: str) -> str:
    lowered = output.lower()
    for fragments, message in FAILURES:
        if any(f in lowered for f in fragments):
            return message
    tail = "\n".join(output.strip().splitlines()[-5:])
    return f"the runtime failed:\n{tail}"


def run_pull(plan: PullPlan, api_key: str, timeout: float, out=sys.stderr) -> None:
    """Run the runtime, echoing its progress; raise PullError with the reason on failure.

    The output is read in a thread so the timeout holds even while the runtime
    hangs with its output open; a hung pull is killed with all its children.
    """
    if shutil.disk_usage(plan.dest.parent).free < MIN_FREE_BYTES:
        print(f"warning: less than {MIN_FREE_BYTES // 1024**3} GB free in {plan.dest.parent}; "
              "NGC images are often larger.", file=out)
    env = {**os.environ, **credentials_env(plan.runtime_name, api_key)}
    proc = subprocess.Popen(plan.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: list[str] = []

    def echo() -> None:
        for line in proc.stdout:
            out.write(line)
            lines.append(line)
            del lines[:-200]

    reader = threading.Thread(target=echo, name="pull-output", daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise PullError(f"the pull did not finish within {timeout:g} s; try again, or raise --timeout.") from None
    finally:
        reader.join(timeout=5)
    if proc.returncode != 0:
        raise PullError(explain("".join(lines)))


def kernel_yaml(plan: PullPlan) -> str:
    label = plan.ref.rsplit("/", 1)[1].replace(":", " ")
    return (
        "kernels:\n"
        "  containers:\n"
        f"    - name: {kernel_name(plan.ref)}\n"
        f"      display_name: \"{label} (NGC container)\"\n"
        f"      image: {plan.dest}\n"
        f"      runtime: {plan.runtime_name}\n"
    )

"""Kernelspecs of a session, built from the admin config at session start (on the node).

`build_kernelspecs` is pure apart from its `NodeProbe`, which answers what
this compute node has (executables, images, modules, R packages); a kernel
whose runtime, image or module is missing is left out with a reason instead
of being offered broken.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...contract import RUNTIME_COMMANDS
from .pythonkernel import with_private_pipe

# an image's or a module's Python: ipykernel through the session's launcher (no TCP pipe), as one -c program
PYTHON_KERNEL_ARGS = ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
# the session's own Python; -P: the kernel's folder (the notebook's) is not put first on sys.path, where a module
# someone left there would shadow the launcher's imports (Python 3.11)
SESSION_KERNEL_ARGS = ["-P", "-m", "spawner.job.kernels.pythonkernel", "-f", "{connection_file}"]
PROBE_TIMEOUT = 30


def _r_has_irkernel(r: str) -> bool:
    check = [r, "--slave", "-e", "quit(status = if (requireNamespace('IRkernel', quietly = TRUE)) 0 else 1)"]
    try:
        return subprocess.run(check, capture_output=True, timeout=PROBE_TIMEOUT).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def module_environment(modulepath: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    env["MODULEPATH"] = ":".join([*modulepath, *filter(None, [os.environ.get("MODULEPATH", "")])])
    return env


def _missing_modules(module_command: str, modulepath: list[str], names: list[str]) -> list[str]:
    """Names the module system (Lmod or Environment Modules) cannot find."""
    env = module_environment(modulepath)
    missing = []
    for name in names:
        try:
            found = (
                subprocess.run(
                    [module_command, "bash", "is-avail", name], capture_output=True, env=env, timeout=PROBE_TIMEOUT
                ).returncode
                == 0
            )
        except (OSError, subprocess.TimeoutExpired):
            found = False
        if not found:
            missing.append(name)
    return missing


@dataclass
class NodeProbe:
    """What this compute node has; each check is a small seam tests can replace."""

    which: Callable[[str], str | None] = shutil.which
    exists: Callable[[str], bool] = os.path.exists
    r_has_irkernel: Callable[[str], bool] = _r_has_irkernel
    missing_modules: Callable[[str, list[str], list[str]], list[str]] = _missing_modules


def _spec(argv: list[str], display_name: str, language: str, **extra) -> dict:
    return {"argv": argv, "display_name": display_name, "language": language, **extra}


def charliecloud_argv(
    ch_run: str, image: str, binds: list[str], home: str, python: list[str], probe: NodeProbe
) -> tuple[list[str], list[str]]:
    """ch-run's arguments for a kernel, and the binds a directory image has no mount point for.

    Unprivileged (user namespaces), read-only image; the home at its own path
    (--home), a private /tmp (nothing of it is shared with other sessions on
    the node), each storage mount where the image has its mount point, the
    job's variables (CUDA_VISIBLE_DEVICES included) passed through.  A bind
    under /tmp needs no mount point: ch-run makes it in the private /tmp.
    """
    argv = [ch_run, "--home", "--private-tmp", f"--cd={home}"]
    missing = []
    for path in binds:
        if (
            os.path.isdir(image)
            and not path.startswith("/tmp/")
            and not probe.exists(os.path.join(image, path.lstrip("/")))
        ):
            missing.append(path)  # ch-run cannot create a mount point in a read-only image
            continue
        argv.append(f"--bind={path}")
    return [*argv, image, "--", *python], missing


def build_kernelspecs(
    kernels: dict, storage: dict[str, str], home: str, python: str, bin_dir: str, probe: NodeProbe, sockets: str
) -> tuple[dict[str, dict], list[str]]:
    """-> ({kernel name: kernel.json content}, [why a kernel was left out]).

    `kernels` is the admin's kernels section, every key present (SessionSpec.kernels).

    `sockets` is the session's private folder of connection files and kernel
    sockets (spawner/job/kernels/isolation.py); a container kernel gets it bound.
    No kernel offers the debugger (the same module says why).
    """
    specs = {
        "python3": _spec(
            [python, *SESSION_KERNEL_ARGS], kernels["python_display_name"], "python", metadata={"debugger": False}
        )
    }
    notes: list[str] = []
    for found, left_out in (
        _r_kernel(kernels, probe),
        _module_kernels(kernels, bin_dir, probe),
        _container_kernels(kernels, storage, home, probe, sockets),
    ):
        specs.update(found)
        notes += left_out
    return specs, notes


def _r_kernel(kernels: dict, probe: NodeProbe) -> tuple[dict[str, dict], list[str]]:
    if not kernels["r"]:
        return {}, []
    r = probe.which(kernels["r_command"])
    if r is None:
        return {}, [f"R kernel left out: {kernels['r_command']} is not installed on this node"]
    if not probe.r_has_irkernel(r):
        return {}, ["R kernel left out: the R package IRkernel is not installed on this node"]
    argv = [r, "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"]
    return {"ir": _spec(argv, kernels["r_display_name"], "R")}, []


def _module_kernels(kernels: dict, bin_dir: str, probe: NodeProbe) -> tuple[dict[str, dict], list[str]]:
    specs: dict[str, dict] = {}
    notes: list[str] = []
    module_command = kernels["module_command"]
    for kernel in kernels["modules"]:
        if not probe.exists(module_command):
            notes.append(f"kernel {kernel['name']} left out: no module system at {module_command}")
            continue
        missing = probe.missing_modules(module_command, kernels["modulepath"], kernel["load"])
        if missing:
            notes.append(f"kernel {kernel['name']} left out: module(s) {', '.join(missing)} not found")
            continue
        launcher = [f"{bin_dir}/dsportal-module-kernel", "--module-command", module_command]
        for folder in kernels["modulepath"]:
            launcher += ["--modulepath", folder]
        for name in kernel["load"]:
            launcher += ["--load", name]
        command = with_private_pipe(kernel["command"])
        specs[kernel["name"]] = _spec([*launcher, "--", *command], kernel["display_name"], kernel["language"])
    return specs, notes


def _container_kernels(
    kernels: dict, storage: dict[str, str], home: str, probe: NodeProbe, sockets: str
) -> tuple[dict[str, dict], list[str]]:
    specs: dict[str, dict] = {}
    notes: list[str] = []
    for kernel in kernels["containers"]:
        argv, kernel_notes = _container_argv(kernel, kernels["container_runtime"], storage, home, probe, sockets)
        notes += kernel_notes
        if argv is not None:
            specs[kernel["name"]] = _spec(argv, kernel["display_name"], "python")
    return specs, notes


def _container_argv(
    kernel: dict, default_runtime: str, storage: dict[str, str], home: str, probe: NodeProbe, sockets: str
) -> tuple[list[str] | None, list[str]]:
    """The command of one container kernel (None: left out), and what to tell about it."""
    runtime_name = kernel["runtime"] or default_runtime
    runtime_command = probe.which(RUNTIME_COMMANDS[runtime_name])
    if runtime_command is None:
        return None, [
            f"kernel {kernel['name']} left out: {runtime_name} ({RUNTIME_COMMANDS[runtime_name]}) "
            "is not installed on this node"
        ]
    if not probe.exists(kernel["image"]):
        return None, [f"kernel {kernel['name']} left out: image {kernel['image']} not found"]
    binds = list(dict.fromkeys([*storage.values(), sockets, *kernel["binds"]]))
    python = with_private_pipe([kernel["python"], *PYTHON_KERNEL_ARGS])
    if runtime_name != "charliecloud":
        everything = dict.fromkeys([*storage.values(), home, sockets, *kernel["binds"]])
        return [runtime_command, "exec", "--nv", "--bind", ",".join(everything), kernel["image"], *python], []
    argv, missing = charliecloud_argv(runtime_command, kernel["image"], binds, home, python, probe)
    if sockets in missing:
        return None, [
            f"kernel {kernel['name']} left out: the image has no {sockets} to mount the "
            "session's kernel sockets on (set TMPDIR under /tmp for the session)"
        ]
    return argv, [
        f"kernel {kernel['name']}: {path} is not bound (the image has no {path} to mount it on)" for path in missing
    ]


def write_kernelspecs(kernels_dir: Path, specs: dict[str, dict]) -> None:
    kernels_dir.mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        folder = kernels_dir / name
        folder.mkdir(exist_ok=True)
        (folder / "kernel.json").write_text(json.dumps(spec, indent=1))

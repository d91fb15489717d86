"""The admin YAML's section kernels: JupyterLab's kernels besides Python 3 and R (modules, containers)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .kinds import AbsPath, Argument, Command, Flag, KernelName, Label, LanguageName, ModuleName
from .section import Section, key, rule_error

RESERVED_KERNELS = ("python3", "ir")

DEFAULT_KERNEL_COMMAND = ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


class ModuleKernel(Section):
    name: KernelName = key(help="Kernel name (its folder name).")
    display_name: Label = key(help="Name in the launcher.")
    load: Annotated[list[ModuleName], Field(min_length=1)] = key(help="Modules to load, in order.")
    command: Annotated[list[Argument], Field(min_length=1)] = key(
        DEFAULT_KERNEL_COMMAND, "The kernel command after loading; {connection_file} is filled in."
    )
    language: LanguageName = key("python", "The kernel's language.")


Runtime = Literal["apptainer", "singularity", "charliecloud"]


class ContainerKernel(Section):
    name: KernelName = key(help="Kernel name (its folder name).")
    display_name: Label = key(help="Name in the launcher.")
    image: AbsPath = key(
        help="The image: a .sif file (Apptainer, SingularityCE), or a directory or .sqfs SquashFS image (Charliecloud)."
    )
    runtime: Literal["", "apptainer", "singularity", "charliecloud"] = key(
        "", "The container runtime; empty = kernels.container_runtime."
    )
    binds: list[AbsPath] = key([], "Extra paths to bind (storage mounts and the home are always bound).")
    python: Command = key("python3", "The image's Python, which runs ipykernel.")


class KernelSettings(Section):
    container_runtime: Runtime = key(
        "apptainer",
        "Runtime of container kernels that name none: apptainer or singularity (--nv for the "
        "GPUs), or charliecloud (ch-run, unprivileged; its image needs NVIDIA's libraries injected once with "
        "ch-fromhost --nvidia).",
    )
    python_display_name: Label = key("Python 3", "Name of the session's own Python 3 kernel in the launcher.")
    user_packages: Flag = key(
        True,
        "Users may add Python packages of their own with %pip install in a notebook: the Python 3 kernel runs "
        "in a layer of each user's (~/.local/share/dsportal/python3.N) on top of the portal's environment, kept "
        "across sessions; the session's server never sees it. Off: Python 3 has the portal's packages only.",
    )
    r: Flag = key(True, "Offer an R kernel (IRkernel) when R is installed on the compute node.")
    r_display_name: Label = key("R", "Name of the R kernel in the launcher.")
    r_command: Command = key("R", "The R executable on the compute nodes.")
    module_command: AbsPath = key(
        "/usr/share/lmod/lmod/libexec/lmod", "Lmod's `lmod` or Environment Modules' `modulecmd` on the compute nodes."
    )
    modulepath: list[AbsPath] = key([], "Module folders searched, before the node's own MODULEPATH.")
    modules: list[ModuleKernel] = key(
        [],
        "Kernels that load environment modules, then run a command.",
        example=[
            {
                "name": "pytorch-modules",
                "display_name": "PyTorch (cluster modules)",
                "load": ["cuda/12.1", "pytorch/2.1"],
                "command": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "language": "python",
            }
        ],
    )
    containers: list[ContainerKernel] = key(
        [],
        "Kernels that run inside a Singularity/Apptainer image (.sif).",
        example=[
            {
                "name": "ngc-pytorch-24.01",
                "display_name": "PyTorch 24.01 (NGC container)",
                "image": "/shared/containers/pytorch_24.01-py3.sif",
                "runtime": "apptainer",
                "binds": ["/scratch"],
            }
        ],
    )

    @model_validator(mode="after")
    def _rules(self) -> KernelSettings:
        problems: list = []
        names = [k.name for k in self.modules] + [k.name for k in self.containers]
        for name in sorted(set(names)):
            if names.count(name) > 1:
                problems.append(("", name, "each kernel name may appear once across modules and containers"))
            if name in RESERVED_KERNELS:
                problems.append(("", name, f"{', '.join(RESERVED_KERNELS)} are the built-in Python 3 and R kernels"))
        for i, kernel in enumerate(self.containers):
            runtime = self.runtime_of(kernel)
            if runtime != "charliecloud" and not kernel.image.endswith(".sif"):
                problems.append(
                    (
                        f".containers[{i}].image",
                        kernel.image,
                        f"{runtime} runs .sif images; convert it (dsportal images pull) or use charliecloud",
                    )
                )
            if runtime == "charliecloud" and kernel.image.endswith(".sif"):
                problems.append(
                    (
                        f".containers[{i}].image",
                        kernel.image,
                        "charliecloud runs a directory or .sqfs image (dsportal images pull --runtime charliecloud)",
                    )
                )
        if problems:
            raise rule_error(*problems)
        return self

    def runtime_of(self, kernel: ContainerKernel) -> str:
        return kernel.runtime or self.container_runtime

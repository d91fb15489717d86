"""The spawn options form, rendered from templates/options_form.html."""

from __future__ import annotations

import json

import jinja2

from portal.settings import SlurmSettings, size_to_mib

from ..contract import data_dir

from .options import SessionRequest
from .resources import resources_for

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def form_context(slurm: SlurmSettings) -> dict:
    """What the form shows and what its live line computes with."""
    chosen = slurm.default_partition
    limits = {
        "cores_per_gpu": slurm.cores_per_gpu,
        "gb_per_gpu": size_to_mib(slurm.memory_per_gpu) / 1024,
        "cpu_only_cores": slurm.cpu_only_cores,
        "cpu_only_gb": size_to_mib(slurm.cpu_only_memory) / 1024,
        "max_gpus": {p.name: p.max_gpus for p in slurm.partitions},
    }
    default_gpus = min(1, chosen.max_gpus)
    first = resources_for(SessionRequest(chosen.name, default_gpus, slurm.default_hours), slurm)
    return {
        "summary": first.summary(),
        "cores_per_gpu": slurm.cores_per_gpu,
        "gb_per_gpu": f"{size_to_mib(slurm.memory_per_gpu) / 1024:g}",
        "partitions": slurm.partitions,
        "default_partition": chosen.name,
        "gpu_choices": list(range(chosen.max_gpus + 1)),
        "default_gpus": default_gpus,
        "default_hours": f"{slurm.default_hours:g}",
        "max_hours": f"{slurm.max_hours:g}",
        "limits_json": json.dumps(limits),
    }


def render_options_form(slurm: SlurmSettings) -> str:
    return _env.get_template("options_form.html").render(**form_context(slurm))

"""The spawn options form, rendered from templates/options_form.html."""

from __future__ import annotations

import json

import jinja2

from portal.settings import SlurmSettings

from ...contract import data_dir
from ...slurmgres import share_choices
from ..base.pagescripts import script_path
from .options import SessionRequest
from .resources import allocation, resources_for

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def shape(gpus: int, slurm: SlurmSettings, shards: int = 0) -> dict:
    """{"cores": N, "gb": M}: what a session of `gpus` GPUs, or of `shards` shares of one, gets
    (spawner/hub/request/resources.py's rule)."""
    cores, memory_mib = allocation(gpus, slurm, shards)
    return {"cores": cores, "gb": memory_mib / 1024}


def form_context(slurm: SlurmSettings, hub_base: str = "/hub/") -> dict:
    """What the form shows and what its script computes with; `hub_base`: the hub's base URL, under which it
    serves the script (spawner/hub/base/pagescripts.py)."""
    chosen = slurm.default_partition
    most = max(p.max_gpus for p in slurm.partitions)
    limits = {
        # what each GPU count brings, computed by the one rule (the page's script only looks it up)
        "shapes": {str(g): shape(g, slurm) for g in range(most + 1)},
        "shard_shapes": {str(k): shape(0, slurm, k) for k in range(1, slurm.shards.per_gpu)},
        "per_gpu": slurm.shards.per_gpu,
        "max_gpus": {p.name: p.max_gpus for p in slurm.partitions},
        "site_account": slurm.account,  # charged when the user names none (else their default)
    }
    default_gpus = min(1, chosen.max_gpus)
    first = resources_for(SessionRequest(chosen.name, default_gpus, slurm.default_hours), slurm)
    one, share = shape(1, slurm), shape(0, slurm, 1)
    return {
        "summary": first.summary(),
        "cores_per_gpu": one["cores"],
        "gb_per_gpu": f"{one['gb']:g}",
        "partitions": slurm.partitions,
        "default_partition": chosen.name,
        "gpu_choices": list(range(chosen.max_gpus + 1)),
        "default_gpus": default_gpus,
        "default_hours": f"{slurm.default_hours:g}",
        "max_hours": f"{slurm.max_hours:g}",
        "limits_json": json.dumps(limits),  # an attribute's value: the template escapes it
        "form_script": hub_base + script_path("form.js"),
        "qos_choices": slurm.qos_choices,
        # shares of a GPU (slurm.shards.per_gpu), shown by the script where the partition's nodes have shards
        "share_choices": share_choices(slurm.shards.per_gpu),
        "cores_per_shard": share["cores"],
        "gb_per_shard": f"{share['gb']:g}",
    }


def render_options_form(slurm: SlurmSettings, hub_base: str = "/hub/") -> str:
    return _env.get_template("options_form.html").render(**form_context(slurm, hub_base))

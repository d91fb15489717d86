"""batchspawner settings that the portal's spawner does not use, and what to set instead.

The portal builds on batchspawner's SlurmSpawner but replaces its job
script, its shell commands and its request options; a value an admin sets on
those traits would be silently without effect.  `ignored_settings` finds them
in JupyterHub's config so the hub can say so at start.
"""

from __future__ import annotations

from typing import Any

# The classes whose config sections reach the portal's spawner.
SECTIONS = ("Spawner", "BatchSpawnerBase", "SlurmSpawner", "SlurmGPUSpawner")


def _yaml(keys: str) -> str:
    return f"set {keys} in the admin YAML instead"


_SCRIPT = (
    "the job script is the portal's own (spawner/hub/request/job.sh.j2); "
    "put extra #SBATCH lines in slurm.extra_sbatch of the admin YAML"
)
_PARSED = "the portal reads squeue's job states itself; nothing replaces it"

# batchspawner trait -> what to do instead
REPLACEMENTS = {
    "batch_script": _SCRIPT,
    "req_prologue": _SCRIPT,
    "req_epilogue": _SCRIPT,
    "req_srun": _SCRIPT,
    "req_options": _yaml("slurm.extra_sbatch"),
    "req_queue": _yaml("slurm.partitions"),
    "req_partition": _yaml("slurm.partitions"),
    "req_host": _yaml("slurm.extra_sbatch (e.g. --nodelist=...)"),
    "req_cluster": _yaml("slurm.extra_sbatch (e.g. --clusters=...)"),
    "req_memory": _yaml("slurm.memory_per_gpu and slurm.cpu_only_memory"),
    "req_nprocs": _yaml("slurm.cores_per_gpu and slurm.cpu_only_cores"),
    "req_ngpus": _yaml("slurm.partitions[].max_gpus (users choose their GPUs in the form)"),
    "req_gres": _yaml("slurm.partitions[].max_gpus (users choose their GPUs in the form)"),
    "req_runtime": _yaml("slurm.default_hours and slurm.max_hours"),
    "req_account": _yaml("slurm.account"),
    "req_qos": _yaml("slurm.qos"),
    "req_reservation": _yaml("slurm.reservation"),
    "req_keepvars_extra": "the job gets only the hub's variables and the session spec; nothing replaces it",
    "exec_prefix": _yaml("slurm.sudo (jobs are submitted with sudo -n -u USER)"),
    "batchspawner_singleuser_cmd": _yaml("environment.prefix"),
    "batch_submit_cmd": _yaml("slurm.sbatch"),
    "batch_query_cmd": _yaml("slurm.squeue"),
    "batch_cancel_cmd": _yaml("slurm.scancel"),
    "state_pending_re": _PARSED,
    "state_running_re": _PARSED,
    "state_exechost_re": _PARSED,
    "state_exechost_exp": _PARSED,
    "state_unknown_re": _PARSED,
}


def ignored_settings(config: Any) -> list[str]:
    """One sentence per batchspawner setting in `config` that the portal ignores."""
    found = []
    for section in SECTIONS:
        if section not in config:  # a traitlets Config makes a section on attribute access; don't
            continue
        for name in sorted(set(config[section]) & set(REPLACEMENTS)):
            found.append(f"c.{section}.{name} is ignored by DS Portal's spawner: {REPLACEMENTS[name]}. Remove it.")
    return found

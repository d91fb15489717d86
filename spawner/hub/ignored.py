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

_SCRIPT = "the job script is the portal's own (spawner/hub/templates/job.sh.j2); extra #SBATCH lines go in slurm.extra_sbatch"
_PARSED = "not needed: the portal reads squeue's states itself"

# batchspawner trait -> what to set in the admin YAML instead
REPLACEMENTS = {
    "batch_script": _SCRIPT,
    "req_prologue": _SCRIPT,
    "req_epilogue": _SCRIPT,
    "req_srun": _SCRIPT,
    "req_options": "slurm.extra_sbatch",
    "req_queue": "slurm.partitions",
    "req_partition": "slurm.partitions",
    "req_host": "slurm.extra_sbatch (e.g. --nodelist=...)",
    "req_cluster": "slurm.extra_sbatch (e.g. --clusters=...)",
    "req_memory": "slurm.memory_per_gpu and slurm.cpu_only_memory",
    "req_nprocs": "slurm.cores_per_gpu and slurm.cpu_only_cores",
    "req_ngpus": "slurm.partitions[].max_gpus (users choose their GPUs in the form)",
    "req_gres": "slurm.partitions[].max_gpus (users choose their GPUs in the form)",
    "req_runtime": "slurm.default_hours and slurm.max_hours",
    "req_account": "slurm.account",
    "req_qos": "slurm.qos",
    "req_reservation": "slurm.reservation",
    "req_keepvars_extra": "nothing: the job gets only the hub's variables and the session spec",
    "exec_prefix": "slurm.sudo (jobs are submitted with sudo -n -u USER)",
    "batchspawner_singleuser_cmd": "environment.prefix",
    "batch_submit_cmd": "slurm.sbatch",
    "batch_query_cmd": "slurm.squeue",
    "batch_cancel_cmd": "slurm.scancel",
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
            found.append(f"c.{section}.{name} is ignored by DS Portal's spawner; "
                         f"set {REPLACEMENTS[name]} in the admin YAML instead, and remove it.")
    return found

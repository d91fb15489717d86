"""Pure builders for a run (a notebook or script as a Slurm job): the sbatch arguments and the job script.

The same shape as a session's (spawner/hub/request/jobspec.py): sbatch runs as the
user through sudo, every value is on the command line or quoted into the
script, nothing passes through a shell unquoted.  Per node a run gets what a
session of that many GPUs gets (spawner/hub/request/resources.py).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import Path

from portal.settings import PortalSettings

from ...contract import run_log, sweep_log
from ...slurmvocab import time_limit
from ..request.jobspec import (
    ACCOUNT_VARIABLES,
    Account,
    as_user,
    gres_option,
    script_templates,
    site_lines,
    site_options,
)
from ..request.resources import Resources, allocation, duration_words, slurm_memory
from .grid import Sweep
from .request import RunRequest, run_name

RUNNER = "dsportal-run-job"  # spawner/job/runs/runner.py, in the session environment's bin


@dataclass(frozen=True)
class RunShape:
    """What the run gets: per node, as a session of `gpus` GPUs."""

    partition: str
    nodes: int
    gpus: int
    cpus: int
    memory_mib: int
    minutes: int

    def summary(self) -> str:
        """'2 nodes × 1 GPU · 8 cores · 48 GB RAM each · 1 h 30 min on sxm2'."""
        gpus = "no GPU" if self.gpus == 0 else f"{self.gpus} GPU" + ("s" if self.gpus > 1 else "")
        where = f"{self.nodes} nodes × " if self.nodes > 1 else ""
        each = " each" if self.nodes > 1 else ""
        memory = self.memory_mib / 1024
        return (
            f"{where}{gpus} · {self.cpus} cores · {memory:g} GB RAM{each} · "
            f"{duration_words(self.minutes)} on {self.partition}"
        )


def shape_of(request: RunRequest, settings: PortalSettings) -> RunShape:
    cpus, memory = allocation(request.gpus, settings.slurm)
    minutes = max(1, round(request.hours * 60))
    return RunShape(request.partition, request.nodes, request.gpus, cpus, memory, minutes)


def run_sbatch_argv(
    settings: PortalSettings, request: RunRequest, account: Account, sweep: Sweep | None = None
) -> list[str]:
    """sbatch as the user, one task per node (the runner starts the processes per GPU itself); a sweep is
    one job array of that shape per point, at most `at_once` running (Slurm's %N)."""
    slurm = settings.slurm
    shape = shape_of(request, settings)
    argv = as_user(slurm, account.name, ACCOUNT_VARIABLES) + [
        slurm.sbatch,
        "--parsable",
        # a run a node's failure ended is not run again behind its user's back (Slurm requeued one that had
        # completed when its node's slurmd died, and ran the notebook a second time): it ends NODE_FAIL, in
        # words, with "Run again"
        "--no-requeue",
        f"--job-name={run_name(request.path, slurm.job_name)}",
        f"--nodes={shape.nodes}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={shape.cpus}",
        f"--mem={slurm_memory(shape.memory_mib)}",
    ]
    if shape.gpus:
        argv.append(gres_option(Resources(shape.partition, shape.gpus, 0, 0, 0, gpu_type=request.gpu_type)))
    argv += [f"--time={time_limit(shape.minutes)}", f"--partition={shape.partition}"]
    argv += site_options(slurm, request.account, request.qos)
    home = account.home.rstrip("/")
    if sweep is not None:
        argv.append(f"--array=0-{sweep.tasks - 1}%{sweep.at_once}")
    argv += [
        f"--output={sweep_log(home) if sweep is not None else run_log(home)}",
        f"--chdir={posixpath.dirname(f'{home}/{request.path}')}",
        "--export=ALL",  # what sudo hands sbatch: its basics and the account's variables
    ]
    return argv


def run_spec(
    settings: PortalSettings, request: RunRequest, home: str, parameters: dict, sweep: Sweep | None = None
) -> dict:
    """What the runner on the node reads (spawner/job/runs/runner.py, RunSpec); a sweep's task takes its
    parameters from the grid by its SLURM_ARRAY_TASK_ID (spawner/sweepgrid.py, as the hub's table does)."""
    home = home.rstrip("/")
    spec = {
        "kind": request.kind,
        "path": f"{home}/{request.path}",
        "output_dir": f"{home}/{settings.jobs.output_folder}",
        "gpus": request.gpus,
        "parameters": parameters,
    }
    if sweep is not None:
        spec["sweep"] = sweep.settings()  # the grid, not every task's point: the runner derives its own
    return spec


TEMPLATES = script_templates(Path(__file__).parent)


def run_script(
    settings: PortalSettings, request: RunRequest, account: Account, parameters: dict, sweep: Sweep | None = None
) -> str:
    spec = run_spec(settings, request, account.home, parameters, sweep)
    bin_dir = Path(settings.environment.prefix) / "bin"
    return TEMPLATES.get_template("run.sh.j2").render(
        username=account.name,
        path=request.path,
        kind=request.kind,
        bin_dir=str(bin_dir),
        extra_sbatch=settings.slurm.extra_sbatch,
        runner=str(bin_dir / RUNNER),
        spec=json.dumps(spec, separators=(",", ":"), ensure_ascii=True),
        site=site_lines(settings.environment),
    )

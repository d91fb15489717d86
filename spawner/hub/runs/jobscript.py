"""Pure builders for a run (a notebook or script as a Slurm job): the sbatch arguments and the job script.

A run asks for its job as a session does, as a JobRequest (spawner/hub/request/jobrequest.py); every value is
on the command line or quoted into the script, nothing passes through a shell unquoted.  Per node a run gets what a
session of that many GPUs gets (spawner/hub/request/resources.py).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import Path

from portal.settings import PortalSettings

from ...contract import run_log, sweep_log
from ...slurmgres import share_words
from ...slurmvocab import time_limit
from ..request.jobrequest import Account, JobRequest
from ..request.jobspec import ACCOUNT_VARIABLES, script_templates, site_lines
from ..request.resources import allocation, duration_words, slurm_memory
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
    shards: int = 0  # shares of one GPU instead of whole GPUs
    per_gpu: int = 0  # the shares a GPU is cut into (slurm.shards.per_gpu)

    def summary(self) -> str:
        """'2 nodes × 1 GPU · 8 cores · 48 GB RAM each · 1 h 30 min on sxm2'."""
        gpus = "no GPU" if self.gpus == 0 else f"{self.gpus} GPU" + ("s" if self.gpus > 1 else "")
        if self.shards:
            gpus = share_words(self.shards, self.per_gpu)
        where = f"{self.nodes} nodes × " if self.nodes > 1 else ""
        each = " each" if self.nodes > 1 else ""
        memory = self.memory_mib / 1024
        return (
            f"{where}{gpus} · {self.cpus} cores · {memory:g} GB RAM{each} · "
            f"{duration_words(self.minutes)} on {self.partition}"
        )


def shape_of(request: RunRequest, settings: PortalSettings) -> RunShape:
    cpus, memory = allocation(request.gpus, settings.slurm, request.shards)
    minutes = max(1, round(request.hours * 60))
    per_gpu = settings.slurm.shards.per_gpu if request.shards else 0
    return RunShape(request.partition, request.nodes, request.gpus, cpus, memory, minutes, request.shards, per_gpu)


def run_job(settings: PortalSettings, request: RunRequest, account: Account, sweep: Sweep | None = None) -> JobRequest:
    """A run's job: one task per node (the runner starts the processes per GPU itself); a sweep is one job array
    of that shape per point, at most `at_once` running (Slurm's %N)."""
    shape = shape_of(request, settings)
    home = account.home.rstrip("/")
    return JobRequest(
        user=account,
        name=run_name(request.path, settings.slurm.job_name),
        partition=shape.partition,
        time=time_limit(shape.minutes),
        cpus=shape.cpus,
        memory=slurm_memory(shape.memory_mib),
        gpus=shape.gpus,
        gpu_type=request.gpu_type,
        shards=shape.shards,
        nodes=shape.nodes,
        account=request.account,
        qos=request.qos,
        output=sweep_log(home) if sweep is not None else run_log(home),
        chdir=posixpath.dirname(f"{home}/{request.path}"),
        env_names=ACCOUNT_VARIABLES,  # what sudo hands sbatch: its basics and the account's variables
        # a run a node's failure ended is not run again behind its user's back (Slurm requeued one that had
        # completed when its node's slurmd died, and ran the notebook a second time): it ends NODE_FAIL, in
        # words, with "Run again"
        requeue=False,
        array=f"0-{sweep.tasks - 1}%{sweep.at_once}" if sweep is not None else "",
    )


def run_spec(
    settings: PortalSettings, request: RunRequest, home: str, parameters: dict, sweep: Sweep | None = None
) -> dict:
    """What the runner on the node reads (spawner/job/runs/runner.py, RunSpec); a sweep's task takes its
    parameters from the grid by its SLURM_ARRAY_TASK_ID (spawner/sweepgrid.py, as the hub's table does)."""
    home = home.rstrip("/")
    spec = {
        "kind": request.kind,
        "path": f"{home}/{request.path}",
        "output_dir": f"{home}/{settings.runs.output_folder}",
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

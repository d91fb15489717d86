"""A notebook or script run as a Slurm job (compute node, as the user): `dsportal-run-job SPEC`.

The hub writes SPEC (JSON) into the job script: what to run, where the output
notebook goes, the checked parameters and the GPUs per node.  A notebook runs
with papermill, which saves the output notebook after every cell, so a time
limit or a failure keeps what ran.  A Python script over several GPUs or nodes
runs as one process per GPU (spawner/job/runs/distributed.py: on one node as child
processes, over several through srun, one task per GPU); the processes find
each other through a private folder, never a TCP store (torchrun's c10d
rendezvous unpickles what any account on the network writes into it).  A
shell script runs with bash (it may srun itself).

Lines starting with contract.RUN_MARK tell the hub how the run ended (it reads
the log's tail as the user); everything else in the log is the run's own output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ... import sweepgrid
from ...contract import RUN_MARK, receipt_environment, run_output, sweep_folder, sweep_output, sweep_results
from ..kernels.kernelspecs import SESSION_KERNEL_ARGS, write_kernelspecs
from ..kernels.userkernels import PrivateKernelSpecManager
from ..kernels.userlayer import ensure_layer, layer_dir, portal_site_packages
from ..receipts import environment
from . import distributed, results


def say(message: str) -> None:
    print(f"{RUN_MARK} {message}", flush=True)


@dataclass(frozen=True)
class RunSpec:
    kind: str  # "notebook", "python", "shell"
    path: str  # absolute
    output_dir: str  # absolute; notebooks only
    gpus: int = 0  # per node
    parameters: dict = field(default_factory=dict)
    sweep: dict = field(default_factory=dict)  # a sweep's grid (spawner/sweepgrid.py): each task's parameters

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        data = json.loads(text)
        return cls(
            kind=str(data["kind"]),
            path=str(data["path"]),
            output_dir=str(data.get("output_dir", "")),
            gpus=int(data.get("gpus", 0)),
            parameters=dict(data.get("parameters") or {}),
            sweep=dict(data.get("sweep") or {}),
        )


@dataclass(frozen=True)
class NotebookRun:
    """One notebook run: a single run's, or a sweep task's (its point, its folder, its results file)."""

    parameters: dict
    output: str
    task: int | None = None
    results: str = ""  # the task's results file


def notebook_run(spec: RunSpec, environ: dict) -> NotebookRun:
    """Where this run's notebook goes and with which parameters (pure)."""
    job_id = environ.get("SLURM_JOB_ID", "0")
    if not spec.sweep:
        return NotebookRun(spec.parameters, run_output(spec.output_dir, spec.path, job_id))
    task = int(environ["SLURM_ARRAY_TASK_ID"])
    folder = sweep_folder(spec.output_dir, spec.path, environ.get("SLURM_ARRAY_JOB_ID", job_id))
    return NotebookRun(
        sweepgrid.task_point(spec.sweep, task), sweep_output(folder, task), task, sweep_results(folder, task)
    )


class Stopped(BaseException):
    """Slurm ended the job (its time limit, or a cancel): SIGTERM arrived.  A BaseException, so that no
    library's catch-all (nbclient, papermill) can swallow it."""


def _stop(signum, frame):
    raise Stopped()


def one_process_argv(spec: RunSpec, nodes: int, python: str) -> list[str] | None:
    """How a script runs as one process (pure); None: one process per GPU on every node (distributed.run)."""
    if spec.kind == "shell":
        return ["bash", spec.path]
    if nodes * max(1, spec.gpus) == 1:
        return [python, spec.path]
    return None


def private_runtime(job_id: str) -> str:
    """A fresh folder only this account can enter (mkdtemp: mode 0700, unpredictable name) for the kernel's
    connection file and sockets; short, so the socket paths fit (spawner/job/kernels/isolation.py)."""
    return tempfile.mkdtemp(prefix=f"dsportal-run-{job_id}-", dir="/tmp")


def ipc_kernel_manager(runtime: str):
    """The kernel manager of a run: ZMQ over Unix sockets in the private runtime folder, as in sessions.

    Jupyter's default, TCP on 127.0.0.1, is reachable by every account on a shared node
    (spawner/job/kernels/isolation.py says why the HMAC key is not enough).  The connection file is named
    here: a kernel manager without one writes it to the temp folder and puts the sockets in its
    working directory.
    """
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import CaselessStrEnum, default

    class IpcKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc")

        @default("kernel_spec_manager")
        def _private_specs(self):  # a kernel the user registered runs through the launcher too, as in sessions
            return PrivateKernelSpecManager(parent=self)

        @default("connection_file")
        def _private_connection_file(self) -> str:
            return os.path.join(runtime, f"kernel-{uuid.uuid4()}.json")

    return IpcKernelManager


def run_kernel(home: Path) -> dict[str, dict]:
    """A run's Python 3 kernel, as the session's: the portal's launcher (Unix sockets only), with the user's own
    packages where they have a layer (spawner/job/kernels/userlayer.py): a notebook that imports what they
    added with %pip runs as a job too.  Written to the run's private folder, first on JUPYTER_PATH."""
    return {
        "python3": {"argv": [run_python(home), *SESSION_KERNEL_ARGS], "display_name": "Python 3", "language": "python"}
    }


def run_python(home: Path) -> str:
    """The python of a run's notebook kernel and of a Python script run as a job: the user's layer where they
    have one (its .pth refreshed: the portal may have moved since their last session), else the portal's."""
    if not (layer_dir(home) / "pyvenv.cfg").is_file():
        return sys.executable
    try:
        return str(ensure_layer(home, sys.executable, portal_site_packages()))
    except (OSError, subprocess.TimeoutExpired) as e:
        say(f"your packages: not used ({e})")
        return sys.executable


def _input(spec: RunSpec, run: NotebookRun):
    """The notebook papermill runs: its path, or for a sweep's task the notebook with the results cell added."""
    if run.task is None:
        return spec.path
    import nbformat  # noqa: PLC0415

    notebook = nbformat.read(spec.path, as_version=4)
    if not results.add_results_cell(notebook, run.task, run.results):
        say('results: none recorded (no code cell tagged "results" in Python or R)')
    return notebook


def run_notebook(spec: RunSpec, job_id: str) -> int:
    import papermill  # noqa: PLC0415  (two seconds: only the notebook runs pay it)
    from papermill.exceptions import PapermillExecutionError

    run = notebook_run(spec, dict(os.environ))
    output = run.output
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    runtime = private_runtime(job_id)
    os.environ["JUPYTER_RUNTIME_DIR"] = runtime
    write_kernelspecs(Path(runtime) / "kernels", run_kernel(Path.home()))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [runtime, os.environ.get("JUPYTER_PATH", "")]))
    say(f"output {output}")
    try:
        papermill.execute_notebook(
            _input(spec, run),
            output,
            parameters=run.parameters,
            cwd=str(Path(spec.path).parent),
            # what the cells print goes to the job's log as it comes (the jobs panel's live tail)
            stdout_file=sys.stdout,
            stderr_file=sys.stderr,
            progress_bar=False,
            request_save_on_cell_execute=True,  # the output notebook after every cell: a time limit keeps what ran
            kernel_manager_class=ipc_kernel_manager(runtime),
        )
    except PapermillExecutionError as e:
        _failed(run, f"cell [{e.exec_count}] raised {e.ename}: {str(e.evalue)[:300]}")
        say(f"failed cell={e.exec_count} error={e.ename}: {str(e.evalue)[:300]}")
        return 1
    except Stopped:
        raise
    except Exception as e:  # the kernel would not start, the notebook would not read ...: the run failed, say why
        _failed(run, f"{type(e).__name__}: {str(e)[:300]}")
        say(f"failed cell= error={type(e).__name__}: {str(e)[:300]}")
        return 1
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    return 0


def _failed(run: NotebookRun, words: str) -> None:
    """A sweep task's failure, beside its results: the sweep's table says it without reading every log."""
    if run.task is not None:
        try:
            results.add_failure(run.results, run.task, words)
        except OSError as e:
            say(f"results: not written ({e})")


def run_script(spec: RunSpec) -> int:
    nodes = distributed.job_nodes(os.environ)
    argv = one_process_argv(spec, nodes, run_python(Path.home()))
    if argv is None:
        per_node = max(1, spec.gpus)
        say(
            f"running {spec.path} as {nodes * per_node} processes ({per_node} per node on {nodes} node"
            + ("s" if nodes > 1 else "")
            + "), meeting in a private folder"
        )
        code = distributed.run([spec.path], per_node)  # a SIGTERM (Stopped) ends the processes on its way out
    else:
        say("running " + " ".join(argv))
        child = subprocess.Popen(argv, cwd=str(Path(spec.path).parent))
        try:
            code = child.wait()
        except Stopped:
            child.terminate()
            raise
    if code:
        say(f"failed cell= error=the script exited with status {code}")
    return 1 if code else 0


def record_environment(spec: RunSpec, environ) -> None:
    """What the run runs with, for its receipt (spawner/job/receipts/environment.py): once per run, a sweep's
    first task to start writes it for the sweep.  A failure is a line of the log; the run goes on."""
    job_id = environ.get("SLURM_ARRAY_JOB_ID") if spec.sweep else environ.get("SLURM_JOB_ID")
    if not job_id:
        return
    home = Path.home()
    try:
        if spec.sweep and Path(receipt_environment(str(home), job_id)).exists():
            return
        kind = "sweep" if spec.sweep else "run"
        kernels = [{"name": "python3"}] if spec.kind == "notebook" else []
        environment.record(home, job_id, kind, environ, run_python(home), kernels, Path(spec.path).parent)
    except (OSError, ValueError) as e:
        print(f"dsportal: receipt: what this run runs with was not recorded ({e})", flush=True)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        spec = RunSpec.from_json(sys.stdin.read() if args[0] == "-" else args[0])  # the job script: on stdin
    except (IndexError, ValueError, KeyError, TypeError) as e:
        say(f"failed cell= error=the job's description does not read ({e}); submit it again from the portal")
        raise SystemExit(2) from None
    signal.signal(signal.SIGTERM, _stop)
    job_id = os.environ.get("SLURM_JOB_ID", "0")
    if spec.sweep:
        say(
            f"task {os.environ.get('SLURM_ARRAY_TASK_ID', '?')} of the sweep {os.environ.get('SLURM_ARRAY_JOB_ID', '')}"
        )
    say(f"started {spec.kind} {spec.path} on {os.environ.get('SLURM_JOB_NODELIST', socket.gethostname())}")
    record_environment(spec, os.environ)
    try:
        code = run_notebook(spec, job_id) if spec.kind == "notebook" else run_script(spec)
    except Stopped:
        say(
            "stopped by Slurm (time limit or cancel)"
            + ("; the output notebook keeps the cells that ran" if spec.kind == "notebook" else "")
        )
        raise SystemExit(143) from None
    if code == 0:
        say("done")
    raise SystemExit(code)


if __name__ == "__main__":
    main()

"""How the processes of one training find each other (compute node, as the user): a private folder, no TCP store.

torchrun's rendezvous and torch's `env://` meet at a TCP store that has no
authentication and whose clients unpickle what it holds: any account that
reaches its port runs code as the user (README, "Security notes").  Here the
processes meet through torch's FileStore in a fresh folder only the user can
enter (mkdtemp: mode 0700, a name nobody can guess) in the home, which all
nodes of a cluster share.  No MASTER_ADDR or MASTER_PORT is set, so a script
that asks for `env://` stops with torch's own words instead of opening a store.

What still listens is the communication library's socket per process (gloo's,
NCCL's), and gloo hands a connection to whoever first names the sequence number
a peer would send.  So after the process group is made every process proves
itself to every other over the very connections the training will use: an
HMAC, under a secret in the private folder, of who sends to whom
(`prove_peers`).  A stranger holding a connection cannot answer, and the
process that finds no proof stops before anything of the training went out.

Three ways in:
- `run(script_argv, per_node)`: one process per GPU, as children on one node,
  or over the job's nodes through srun (the runner, spawner/job/runs/runner.py, and
  the multi-GPU template use it; `python -m spawner.job.runs.distributed --per-node
  N script.py ARGS` from a shell or an sbatch script);
- `python -m spawner.job.runs.distributed --slurm-task script.py ARGS`: what srun
  starts on every node: Slurm's task numbers as torch's RANK, LOCAL_RANK, ...;
- `init_process_group(backend)`, in the script.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from urllib.parse import urlparse

INIT = "DSPORTAL_DIST_INIT"  # file:///home/USER/.dsportal-dist-XXXXXXXX/store
STORE = "store"
SECRET = "secret"
PROOF_TIMEOUT = timedelta(minutes=2)  # every peer is past init_process_group: its proof comes in milliseconds
# A TCP rendezvous of the user's own shell or session must not leak into the run's processes.
NOT_PASSED = ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE")
TASK_FLAG = "--slurm-task"
USAGE = (
    "usage: python -m spawner.job.runs.distributed --per-node N script.py [ARGS...]\n"
    "  starts one process per GPU (N per node) on this node, or over the nodes of the Slurm job it runs in;\n"
    "  the script calls spawner.job.runs.distributed.init_process_group(backend)."
)


class PeerNotProven(RuntimeError):
    """A connection of the process group did not carry its peer's proof: a stranger took it, or the peer failed."""


# --- the launcher -----------------------------------------------------------------------------


def private_folder(home: str) -> str:
    """A fresh folder only this account can enter, with the run's secret in it; the processes' store goes there."""
    folder = tempfile.mkdtemp(prefix=".dsportal-dist-", dir=home)
    fd = os.open(os.path.join(folder, SECRET), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(32))
    return folder


def init_url(folder: str) -> str:
    return "file://" + os.path.join(folder, STORE)


def launch_environment(env: Mapping[str, str], folder: str, nccl_magic: int) -> dict[str, str]:
    """What every process of the run inherits (pure).

    NCCL_SOCKET_MAGIC: NCCL (2.30.7 and later) checks it on the connections its
    socket and InfiniBand transports open between nodes; its default is a
    published constant.  Older NCCL ignores it (README).
    """
    passed = {k: v for k, v in env.items() if k not in NOT_PASSED}
    return passed | {INIT: init_url(folder), "NCCL_SOCKET_MAGIC": f"0x{nccl_magic:016x}"}


def local_rank_environment(env: Mapping[str, str], rank: int, world: int) -> dict[str, str]:
    """Process `rank` of `world` on this one node, in torchrun's names (pure)."""
    ranks = {"RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": world, "LOCAL_WORLD_SIZE": world, "GROUP_RANK": 0}
    return dict(env) | {k: str(v) for k, v in ranks.items()}


def slurm_rank_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A task srun started, in torchrun's names: Slurm numbers the tasks of a step as torch numbers ranks (pure)."""
    world = int(env["SLURM_STEP_NUM_TASKS"])
    nodes = int(env["SLURM_STEP_NUM_NODES"])
    ranks = {
        "RANK": env["SLURM_PROCID"],
        "LOCAL_RANK": env["SLURM_LOCALID"],
        "WORLD_SIZE": world,
        "LOCAL_WORLD_SIZE": world // nodes,
        "GROUP_RANK": env["SLURM_NODEID"],
    }
    return dict(env) | {k: str(v) for k, v in ranks.items()}


def srun_argv(python: str, script_argv: list[str], nodes: int, per_node: int, cpus_per_node: int) -> list[str]:
    """One task per GPU on every node of the job (pure); a task that fails ends the others."""
    return [
        "srun",
        f"--nodes={nodes}",
        f"--ntasks={nodes * per_node}",
        f"--ntasks-per-node={per_node}",
        f"--cpus-per-task={max(1, cpus_per_node // per_node)}",
        "--kill-on-bad-exit=1",
        python,
        "-m",
        "spawner.job.runs.distributed",
        TASK_FLAG,
        *script_argv,
    ]


def job_nodes(env: Mapping[str, str]) -> int:
    return int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or 1)


def cpus_per_node(env: Mapping[str, str]) -> int:
    return int(env.get("SLURM_CPUS_ON_NODE") or env.get("SLURM_CPUS_PER_TASK") or os.cpu_count() or 1)


def run(
    script_argv: list[str],
    per_node: int,
    show: Callable[[str], object] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run `python script_argv...` as `per_node` processes on each node of this job (or of this one node), all of
    them given what init_process_group needs; wait for them.  -> 0, or the first failing process's exit status.

    show: called with each line the processes print (a notebook shows them); by default they write to this
    process's own output.  One process that fails ends the others.  The folder goes when they end.
    """
    base = dict(os.environ if env is None else env)
    nodes = job_nodes(base)
    folder = private_folder(os.path.expanduser("~"))
    launched = launch_environment(base, folder, secrets.randbits(64))
    output, reader = None, None
    if show is not None:
        read_end, output = os.pipe()
        reader = threading.Thread(target=_pass_lines, args=(read_end, show), daemon=True)
    children: list[subprocess.Popen] = []
    try:
        if nodes > 1:
            argv = srun_argv(sys.executable, script_argv, nodes, per_node, cpus_per_node(base))
            children.append(subprocess.Popen(argv, env=launched, stdout=output, stderr=output))
        else:
            for rank in range(per_node):
                rank_env = local_rank_environment(launched, rank, per_node)
                children.append(
                    subprocess.Popen([sys.executable, *script_argv], env=rank_env, stdout=output, stderr=output)
                )
        if output is not None:
            os.close(output)
            output = None
            reader.start()
        return _wait_all(children)
    finally:
        # first: a cancel or the time limit allows only Slurm's KillWait (seconds) before SIGKILL
        shutil.rmtree(folder, ignore_errors=True)
        _end(children)
        if output is not None:
            os.close(output)
        if reader is not None and reader.is_alive():
            reader.join(timeout=10)


def _pass_lines(fd: int, show: Callable[[str], object]) -> None:
    with open(fd, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            show(line)


def _wait_all(children: list[subprocess.Popen]) -> int:
    """Until all exit with 0 (-> 0) or one fails (-> its status; the others are ended)."""
    running = list(children)
    while running:
        for child in list(running):
            code = child.poll()
            if code is None:
                continue
            running.remove(child)
            if code != 0:
                _end(running)
                return code if code > 0 else 128 - code
        time.sleep(0.1)
    return 0


def _end(children: list[subprocess.Popen]) -> None:
    """SIGTERM (srun passes it to its tasks), then SIGKILL after 10 s."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# --- inside the script ------------------------------------------------------------------------


def secret_of(url: str) -> bytes:
    with open(os.path.join(os.path.dirname(urlparse(url).path), SECRET), "rb") as f:
        return f.read()


def proof(secret: bytes, sender: int, receiver: int, tag: int) -> bytes:
    """What `sender` shows `receiver`: bound to the direction, so a stranger who is shown one has none to give."""
    return hmac.new(secret, f"{sender}>{receiver}#{tag}".encode(), hashlib.sha256).digest()


def gloo_contexts(env: Mapping[str, str]) -> int:
    """How many sets of connections gloo makes: one per interface named in GLOO_SOCKET_IFNAME, else one.
    A point-to-point message with tag t goes over set t modulo that number."""
    return len([name for name in env.get("GLOO_SOCKET_IFNAME", "").split(",") if name]) or 1


def init_process_group(backend: str | None = None, timeout: timedelta | None = None) -> tuple[int, int, int]:
    """torch's default process group through the launcher's private folder, every peer proven.

    -> (rank, world size, local rank).  backend: "gloo", "nccl", or None (torch's choice: gloo for CPU
    tensors, NCCL for GPU tensors where there are GPUs).
    """
    import torch.distributed as dist

    url = os.environ.get(INIT)
    if not url:
        raise RuntimeError(
            f"{INIT} is not set: this process was not started by the portal's launcher. Start the script with "
            "'Run as a job', spawner.job.runs.distributed.run, or `python -m spawner.job.runs.distributed --per-node N "
            "script.py`; torchrun and env:// meet at a TCP store that other accounts can reach (the docs: admins, security)."
        )
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    options = {"timeout": timeout} if timeout else {}
    dist.init_process_group(backend, init_method=url, rank=rank, world_size=world, **options)
    if "gloo" in str(dist.get_backend()):
        prove_peers(secret_of(url))
    return rank, world, int(os.environ.get("LOCAL_RANK", "0"))


def prove_peers(secret: bytes, group=None, timeout: timedelta = PROOF_TIMEOUT) -> None:
    """Every process shows every other, over each of gloo's connections between them, the proof of its direction,
    and checks the one it is shown.  Call it for a group of your own (dist.new_group) too: its connections are new.

    Raises PeerNotProven when a proof is wrong or does not come: the connection is not the peer's.
    """
    import torch
    import torch.distributed as dist

    me = dist.get_rank()
    members = dist.get_process_group_ranks(group) if group is not None else range(dist.get_world_size())
    shown: dict[tuple[int, int], torch.Tensor] = {}
    works = []
    for tag in range(gloo_contexts(os.environ)):
        for peer in members:
            if peer == me:
                continue
            mine = torch.frombuffer(bytearray(proof(secret, me, peer, tag)), dtype=torch.uint8)
            shown[peer, tag] = torch.zeros(len(mine), dtype=torch.uint8)
            works.append(dist.isend(mine, peer, group=group, tag=tag))
            works.append(dist.irecv(shown[peer, tag], peer, group=group, tag=tag))
    try:
        for work in works:
            work.wait(timeout)
    except RuntimeError as e:
        raise PeerNotProven(
            f"rank {me}: a peer did not prove itself ({e}; waited at most {timeout}): another account may have "
            "taken the connection, or a process of the run failed. Stopping before anything of the training went out."
        ) from None
    for (peer, tag), got in shown.items():
        if not hmac.compare_digest(bytes(got.tolist()), proof(secret, peer, me, tag)):
            raise PeerNotProven(
                f"rank {me}: the connection to rank {peer} did not prove it came from rank {peer}: another account "
                "took it. Stopping before anything of the training went out."
            )


def _terminated(signum, frame):
    raise SystemExit(128 + signum)  # through run()'s cleanup: the folder removed, the processes ended


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == TASK_FLAG:
        script = args[1:]
        os.execve(sys.executable, [sys.executable, *script], slurm_rank_environment(os.environ))
    if len(args) >= 3 and args[0] == "--per-node" and args[1].isdigit() and int(args[1]) >= 1:
        signal.signal(signal.SIGTERM, _terminated)
        raise SystemExit(run(args[2:], int(args[1])))
    print(USAGE, file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()

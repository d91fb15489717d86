"""A training's processes meet through the private folder (spawner/job/runs/distributed.py): real torch, real gloo,
processes on this machine; and a stranger on the machine who takes one of gloo's connections.

gloo gives a rank's waiting connection to whoever first connects and names the sequence number its peer
will send (tests/support/neighbour.py, GlooStranger): with plain init_process_group the stranger reads the
training's numbers and answers in the peer's place.  The portal's init_process_group proves every peer
first, so the rank that holds the stranger's connection stops before anything went out.
"""

from __future__ import annotations

import itertools
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

from spawner.job.runs import distributed
from tests.support.http import wait_until
from tests.support.neighbour import GlooStranger

ROOT = str(Path(__file__).resolve().parents[2])
PATTERN = 1234.875  # what each rank adds (plus its rank), so that the stranger knows it when he reads it

SCRIPT = f"""
import datetime, os, sys, time
import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
time.sleep(float(sys.argv[2]) * rank)  # later ranks connect later: the window a stranger uses
if sys.argv[1] == "portal":
    from spawner.job.runs.distributed import init_process_group
    init_process_group("gloo")
else:  # torch's own, through the same private store
    url, limit = os.environ["DSPORTAL_DIST_INIT"], datetime.timedelta(seconds=20)  # a rank left waiting gives up
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world, timeout=limit)
# every pair of ranks exchanges a number, so that whatever connection a stranger holds carries one
mine = torch.full((64,), {PATTERN} + rank, dtype=torch.float64)
theirs = {{peer: torch.zeros(64, dtype=torch.float64) for peer in range(world) if peer != rank}}
works = [dist.isend(mine, peer) for peer in theirs] + [dist.irecv(t, peer) for peer, t in theirs.items()]
for work in works:
    work.wait()
x = mine.clone()
dist.all_reduce(x)
ok = all(bool(torch.all(t == {PATTERN} + peer)) for peer, t in theirs.items())
ok = ok and bool(torch.all(x == world * {PATTERN} + sum(range(world))))
# one write per line: the processes share one output, and their lines must not interleave
sys.stdout.write(f"rank {{rank}} of {{world}}: {{'right' if ok else 'ALTERED'}} sum, master port {{os.environ.get('MASTER_PORT')}}\\n")
dist.destroy_process_group()
"""


def patterns(world: int) -> tuple[bytes, ...]:
    values = [PATTERN + r for r in range(world)]
    return tuple(struct.pack("<d", sum(c)) for n in range(1, world + 1) for c in itertools.combinations(values, n))


def launch(tmp_path: Path, mode: str, world: int, delay: float) -> tuple[int, str]:
    script = tmp_path / f"train-{mode}.py"
    script.write_text(SCRIPT)
    lines: list[str] = []
    env = dict(os.environ, PYTHONPATH=ROOT, HOME=str(tmp_path), MASTER_PORT="29500")
    code = distributed.run([str(script), mode, str(delay)], world, show=lines.append, env=env)
    return code, "".join(lines)


def test_the_processes_meet_in_the_private_folder_and_leave_nothing(tmp_path):
    code, out = launch(tmp_path, "portal", 3, 0)
    assert code == 0, out
    assert sorted(line for line in out.splitlines() if line.startswith("rank ")) == [
        f"rank {r} of 3: right sum, master port None"
        for r in range(3)  # a MASTER_PORT of the shell is not passed
    ]
    assert not list(tmp_path.glob(".dsportal-dist-*"))  # the folder went with the processes


def test_a_stopped_launcher_removes_the_folder_and_ends_its_processes(tmp_path):
    # what Slurm's cancel or time limit does: SIGTERM, and SIGKILL KillWait seconds later
    script = tmp_path / "wait.py"
    script.write_text(
        "import os, sys, time\nsys.stdout.write(f'pid {os.getpid()}\\n'); sys.stdout.flush()\ntime.sleep(600)\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT, HOME=str(tmp_path))
    launcher = subprocess.Popen(
        [sys.executable, "-m", "spawner.job.runs.distributed", "--per-node", "2", str(script)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    pids = [int(launcher.stdout.readline().split()[1]) for _ in range(2)]
    assert len(list(tmp_path.glob(".dsportal-dist-*"))) == 1
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=20) == 128 + signal.SIGTERM  # within Slurm's KillWait (30 s): before its SIGKILL
    assert not list(tmp_path.glob(".dsportal-dist-*"))
    for pid in pids:
        wait_until(lambda pid=pid: not Path(f"/proc/{pid}").exists(), 20, f"process {pid} ended")


def hijacked_run(tmp_path: Path, mode: str) -> tuple[int, str, dict]:
    """Runs of 5 ranks, each 2 s after the one before, until the stranger took a connection (a rank whose
    socket sorts first waits for its peer: about 1 in 2 of each pair)."""
    for _ in range(4):
        stranger = GlooStranger(f"train-{mode}.py".encode(), patterns(5))
        try:
            code, out = launch(tmp_path, mode, 5, 2)
        finally:
            seen = stranger.stop()
        if seen["hijacked"]:
            return code, out, seen
    raise AssertionError(f"the stranger never took a connection: {seen}")


def test_gloo_gives_a_stranger_a_ranks_connection_and_the_trainings_numbers(tmp_path):
    # why the portal proves every peer: without it, the stranger reads the numbers and alters the sum
    code, out, seen = hijacked_run(tmp_path, "plain")
    assert seen["patterns_seen"], (seen, out)


def test_a_stranger_who_takes_a_connection_gets_no_number_and_the_run_stops_with_words(tmp_path):
    code, out, seen = hijacked_run(tmp_path, "portal")
    assert seen["patterns_seen"] == [], (seen, out)
    assert code != 0, out
    assert "did not prove" in out, out
    assert "ALTERED" not in out and "right sum" not in out, out  # no rank got as far as the training

"""Benchmark: how long the hub takes to start again with many users in its database and no session running.

The scale rig's restart with 2,000 sessions and 20,000 users took 51 s until the API answered (8.8 s with 500
sessions and 5,000 users).  This separates the users from the sessions: the same hub, proxy and mock Slurm
(tests/support/scale.py) on PostgreSQL, `--users` users written straight into JupyterHub's tables (each with
JupyterHub's default `user` role, as its user API makes them), then the hub started twice, each start timed
until its API answers; `--profile FILE` records the second start with py-spy (on PATH) and prints where its time
went.  Asserts nothing about speed.  Run as root from the repository's root:

    /opt/dsportal/venv/bin/python -m tests.perf.bench_restart [--users 20000] [--profile restart.txt]
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from jupyterhub import orm

from tests.support.scale import ScaleRig, user_names


def write_users(db_url: str, names: list[str]) -> float:
    """`names` as JupyterHub users with its `user` role, in batches; seconds taken."""
    began = time.monotonic()
    db = orm.new_session_factory(db_url)()
    role = db.query(orm.Role).filter_by(name="user").one()
    for i in range(0, len(names), 2000):
        users = [orm.User(name=name) for name in names[i : i + 2000]]
        for user in users:
            user.roles.append(role)
        db.add_all(users)
        db.commit()
    db.close()
    return time.monotonic() - began


def record(pid_of, out: Path, seconds: int) -> subprocess.Popen | None:
    """py-spy recording the hub's process (once it exists) for `seconds`, raw stacks into `out`."""
    spy = shutil.which("py-spy")
    if not spy:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    deadline = time.monotonic() + 30
    while pid_of() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    argv = [spy, "record", "--pid", str(pid_of()), "--duration", str(seconds), "--format", "raw", "-o", str(out)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def top_functions(raw: Path, count: int = 15) -> list[tuple[float, str]]:
    """The functions the recording saw most often (each stack counted once per function), as shares of it."""
    total, seen = 0, Counter()
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        total += int(samples)
        for frame in {frame.split(" (")[0] + " " + frame.split("(")[-1].split(":")[0] for frame in stack.split(";")}:
            seen[frame] += int(samples)
    interesting = [(n / total, f) for f, n in seen.most_common() if "/tornado/" not in f and "asyncio" not in f]
    return interesting[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20000)
    parser.add_argument("--profile", metavar="FILE", help="py-spy's raw stacks of the second start")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dsportal-restart-"))
    rig = ScaleRig(root, "postgresql")
    try:
        rig.start()
        rig.hub.stop()
        written = write_users(rig.portal["hub"]["db_url"], user_names(args.users))
        print(f"{args.users} users written in {written:.1f} s", flush=True)
        first = rig.restart_hub()
        print(f"first start with them: API answers after {first:.1f} s", flush=True)
        rig.hub.stop()
        rig.hub.proc = None
        spies: list[subprocess.Popen] = []
        if args.profile:
            pid_of = lambda: rig.hub.proc.pid if rig.hub.proc else None  # noqa: E731
            watcher = threading.Thread(target=lambda: spies.append(record(pid_of, Path(args.profile), 300)))
            watcher.start()
        second = rig.restart_hub()
        print(f"second start: API answers after {second:.1f} s", flush=True)
        if args.profile:
            watcher.join()
            spies[0].send_signal(signal.SIGINT)  # py-spy writes what it recorded when interrupted
            spies[0].wait(60)
            for share, function in top_functions(Path(args.profile)):
                print(f"  {share * 100:5.1f}% {function}")
    finally:
        rig.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

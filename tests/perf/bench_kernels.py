"""Benchmark: how long each launcher kernel takes to start and answer, on the real dev cluster.

One session (1 GPU); each kernel is started `--runs` times through the
session's own REST API and runs `1+1`; the time from the start request to
the reply is printed (median, min, max).  The container kernels run in
Charliecloud: the image built here (debian-py) and the one pulled from the
dev registry (debian-py-pulled), next to the session's plain Python 3.
Asserts nothing about speed.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_kernels [--runs 5]   (from the repository's root)
"""

from __future__ import annotations

import argparse
import statistics
import time

from tests.support.cluster import Cluster, one_session
from tests.support.jupyter import run_code

USER = "alice"
KERNELS = ("python3", "debian-py", "debian-py-pulled", "demo-module", "ir")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with one_session(USER, {"gpus": 1, "hours": 1}) as cluster:
        timings = {kernel: [start_and_answer(cluster, kernel) for _ in range(args.runs)] for kernel in KERNELS}
    print(f"kernel start to first answer, {args.runs} runs each (one session, 1 GPU):")
    for kernel, seconds in timings.items():
        print(
            f"  {kernel:<18} median {statistics.median(seconds):5.2f} s   min {min(seconds):5.2f}   "
            f"max {max(seconds):5.2f}"
        )


def start_and_answer(cluster: Cluster, kernel: str) -> float:
    started = time.monotonic()
    status, out = run_code(cluster, USER, kernel, "print(1+1)")  # R prints "[1] 2"
    if status != "ok" or out.strip() not in ("2", "[1] 2"):
        raise RuntimeError(f"{kernel} did not answer: {status} {out!r}")
    return time.monotonic() - started


if __name__ == "__main__":
    main()

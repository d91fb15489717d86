"""Benchmark: carrying a kernel's variables into a new kernel (spawner/job/continuation/carry.py).

For namespaces of 100 MB and 1 GB (numpy arrays and a torch model, as a notebook that trained holds them), the
time `dump` takes to write them into a private folder and `load` to read them back, and the bytes written.  In
this process, as a kernel would run them; the folder on the machine's own disk (a site's home on a network
file system is slower: these are the least the hand-over costs).

Asserts nothing about speed.  Run from the repository's root:

    /opt/dsportal/venv/bin/python -m tests.perf.bench_carry [--sizes 100,1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from spawner.job.continuation.carry import dump, load


def namespace_of(mb: int) -> dict:
    """About `mb` MB: a few arrays, a table of floats and a small trained model."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    arrays = {f"features_{i}": np.random.default_rng(i).random((mb * 1024 * 1024 // 8 // 4,)) for i in range(4)}
    return {**arrays, "model": model, "labels": list(range(1000)), "lr": 0.01}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000", help="namespace sizes in MB, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("carrying a kernel's variables (dump into a private folder, load into a new namespace):")
    for mb in (int(s) for s in args.sizes.split(",")):
        namespace = namespace_of(mb)
        dumps, loads, written = [], [], 0
        for _ in range(args.runs):
            folder = Path(tempfile.mkdtemp(prefix="bench-carry-"))
            try:
                started = time.perf_counter()
                report = dump(namespace, folder / "carry", max_bytes=10 * 1024**3, seconds=600)
                dumps.append(time.perf_counter() - started)
                written = report["bytes"]
                fresh: dict = {}
                started = time.perf_counter()
                load(fresh, folder / "carry", gpu_available=False)
                loads.append(time.perf_counter() - started)
                assert sorted(fresh) == sorted(namespace)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        print(
            f"  {mb} MB ({written / 1e6:.0f} MB written, {len(namespace)} variables): dump "
            f"{statistics.median(dumps):.2f} s, load {statistics.median(loads):.2f} s (median of {args.runs}; "
            f"{written / 1e6 / statistics.median(dumps):.0f} MB/s out, {written / 1e6 / statistics.median(loads):.0f} MB/s in)"
        )


if __name__ == "__main__":
    main()

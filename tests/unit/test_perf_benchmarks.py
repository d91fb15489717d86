"""Every benchmark's pure parts, run by the suite: each one loads and reads its arguments without a cluster, and
the numbers they print are computed right (tests/perf/stats.py; memory and timelines have their own tests)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.perf.stats import ms, percentile

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p.stem for p in (ROOT / "tests" / "perf").glob("bench_*.py"))


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmark_loads_and_reads_its_arguments_without_a_cluster(name):
    # a benchmark that fails at import, or runs on --help, would crash `deploy/devcluster bench` where it stands
    done = subprocess.run(
        [sys.executable, "-m", f"tests.perf.{name}", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: "), done.stdout[:300]


def test_the_benchmarks_list_is_the_folders():
    assert "bench_spawn" in BENCHMARKS and "bench_sweeps" in BENCHMARKS and len(BENCHMARKS) >= 11


def test_percentiles_are_nearest_rank_and_nan_for_nothing():
    assert percentile([0.3, 0.1, 0.2], 50) == 0.2
    assert percentile([0.1, 0.2, 0.3, 0.4], 100) == 0.4
    assert percentile([0.1, 0.2, 0.3, 0.4], 0) == 0.1
    assert math.isnan(percentile([], 50))
    assert ms([0.0125, 0.5], 0) == "12 ms"

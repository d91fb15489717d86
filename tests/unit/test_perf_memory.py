"""The memory benchmark's pure rule for "the processes hold still" (tests/perf/memory.py)."""

from tests.perf.memory import steady


def test_steady_needs_two_readings_of_the_same_processes_within_one_percent():
    assert not steady([])
    assert not steady([([1, 2], 100_000)])
    assert steady([([1, 2], 100_000), ([1, 2], 100_900)])
    assert not steady([([1, 2], 100_000), ([1, 2], 101_100)])
    assert not steady([([1, 2, 3], 100_000), ([1, 2], 100_000)])
    assert steady([([1], 50), ([1, 2, 3], 100_000), ([1, 2, 3], 99_500)])

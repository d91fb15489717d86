"""The memory benchmark's pure rule for "the processes hold still" (tests/perf/memory.py)."""

import psutil

from tests.perf import memory
from tests.perf.memory import steady


def test_steady_needs_two_readings_of_the_same_processes_within_one_percent():
    assert not steady([])
    assert not steady([([1, 2], 100_000)])
    assert steady([([1, 2], 100_000), ([1, 2], 100_900)])
    assert not steady([([1, 2], 100_000), ([1, 2], 101_100)])
    assert not steady([([1, 2, 3], 100_000), ([1, 2], 100_000)])
    assert steady([([1], 50), ([1, 2, 3], 100_000), ([1, 2, 3], 99_500)])


class Gone:
    """A process that ended between being listed and being read."""

    pid = 42

    def username(self):
        raise psutil.NoSuchProcess(self.pid)

    def memory_full_info(self):
        raise psutil.NoSuchProcess(self.pid)


class Here:
    pid = 7

    def __init__(self, children=()):
        self._children = list(children)

    def username(self):
        return "alice"

    def children(self, recursive=False):
        return self._children


def test_a_process_that_ends_while_it_is_read_is_skipped_not_a_crash(monkeypatch):
    # `deploy/devcluster bench` once stopped at its first benchmark: NoSuchProcess from a child that had exited
    top = Here([Gone()])
    monkeypatch.setattr(memory.psutil, "Process", lambda pid: top if pid == 7 else Gone())
    assert memory.user_tree_pids(7, "alice") == [7]
    assert memory.descendants(7) == 1
    assert memory.footprint([42]) == (0, 0)


def test_a_tree_whose_top_has_ended_is_empty(monkeypatch):
    def ended(pid):
        raise psutil.NoSuchProcess(pid)

    monkeypatch.setattr(memory.psutil, "Process", ended)
    assert memory.user_tree_pids(7, "alice") == []
    assert memory.descendants(7) == 0

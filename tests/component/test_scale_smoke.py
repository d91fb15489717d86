"""The scale rig in small (tests/support/scale.py): every path of the 500-session benchmark, once, on PostgreSQL.

Sessions start in waves through the real hub, proxy, spawner and port
callback; queued ones stay queued; the hub restarts and finds every session
again; stopping leaves nothing in the queue.  Counts, not times: the
benchmark (tests/perf/bench_scale.py) prints those.
"""

from __future__ import annotations

import pytest

from tests.support.scale import HELD_PARTITION, ScaleRig, user_names


@pytest.fixture
def a_rig(tmp_path):
    rig = ScaleRig(tmp_path, db="postgresql", poll_interval=5)
    rig.start()
    yield rig
    rig.stop()


def test_sessions_start_survive_a_hub_restart_and_stop_cleanly(a_rig):
    names = user_names(12)
    running, queued = names[:8], names[8:10]
    a_rig.create_users(names)
    for wave in (running[:4], running[4:]):
        assert a_rig.start_sessions(wave, {"gpus": 1, "hours": 1}) == []
        a_rig.wait_for(lambda wave=wave: set(wave) <= a_rig.servers("ready"), 120, "a wave of sessions ready")
    assert a_rig.start_sessions(queued, {"gpus": 1, "partition": HELD_PARTITION}) == []
    a_rig.wait_for(lambda: a_rig.queue().get("PENDING") == 2, 60, "the queued sessions' jobs")
    assert a_rig.servers("ready") == set(running)
    assert a_rig.queue() == {"RUNNING": 8, "PENDING": 2}

    a_rig.restart_hub()
    a_rig.wait_for(lambda: a_rig.servers("ready") == set(running), 120, "every session found again")
    # none lost, none started twice; a start the old hub was still waiting for is cancelled (no one would
    # ever connect to it: spawner.poll, issue 15), and its user told so on the home page
    a_rig.wait_for(lambda: a_rig.queue() == {"RUNNING": 8, "CANCELLED": 2}, 60, "the queued starts ended")
    status, routes = a_rig.api("GET", "/proxy")
    assert {f"/user/{n}/" for n in running} <= set(routes), routes

    assert a_rig.stop_sessions(running) == []
    a_rig.wait_for(lambda: not a_rig.servers("active"), 120, "every session stopped")
    a_rig.wait_for(lambda: set(a_rig.queue()) <= {"CANCELLED"}, 60, "nothing left in the queue")
    assert a_rig.slurm_commands()["scancel"] >= 8

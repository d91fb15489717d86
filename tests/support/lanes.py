"""The lanes of the dev cluster's tests: which people one pytest process acts as, stops and cancels.

`deploy/devcluster test` runs the integration and browser tests in two lanes side by side, then the tests that
need the cluster to themselves, each in a pytest process of its own (DSPORTAL_TEST_LANE names its lane):

  main   alice, bob, carol, dave: most tests, one after another
  side   erin, frank, grace: the long tests that mostly wait (a session's real time limit, the idle timeouts,
         the sweeps), marked `side`, one after another beside the main lane
  alone  everyone: the tests marked `alone`, which count the cluster's free GPUs or its totals, restart the hub
         or Slurm, or flood the login, with nothing beside them

Run without a lane (a developer's `pytest tests/integration/test_x.py`), a process acts as the lane of the tests
it runs and cleans everyone, as `alone` does.  The two lanes never touch each other's people: the per-test clean
(tests/support/cluster.py) stops and cancels only the people of its own lane, and a test of one lane that acts as
a person of the other (a token, a start, a login) fails at once with what to do (`check_person`).
"""

from __future__ import annotations

import os

from deploy.dev import demo

LANES = ("main", "side", "alone")
MAIN = tuple(u.name for u in demo.PEOPLE)
SIDE = tuple(u.name for u in demo.SIDE_PEOPLE)


def lane() -> str:
    """This process's lane: DSPORTAL_TEST_LANE, or 'alone' where it names none."""
    name = os.environ.get("DSPORTAL_TEST_LANE", "") or "alone"
    if name not in LANES:
        raise ValueError(f"DSPORTAL_TEST_LANE={name!r}: use one of {', '.join(LANES)}, or leave it unset")
    return name


def people(of_lane: str) -> tuple[str, ...]:
    """The people a process of the lane stops and cancels between tests (pure)."""
    return {"main": MAIN, "side": SIDE}.get(of_lane, MAIN + SIDE)


def check_person(name: str, of_lane: str) -> None:
    """Refuses (ValueError, with what to do) a person of the other lane: a test in `main` acting as erin would be
    stopped by the side lane's clean, and would stop or count the side lane's sessions (pure)."""
    other = {"main": ("side", SIDE), "side": ("main", MAIN)}.get(of_lane)
    if other and name in other[1]:
        raise ValueError(
            f"a test in the {of_lane} lane acts as {name}, one of the {other[0]} lane's people "
            f"({', '.join(other[1])}): act as one of {', '.join(people(of_lane))}, or mark the test "
            f"`{other[0]}` if it belongs there (tests/support/lanes.py)"
        )

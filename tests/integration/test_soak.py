"""A short soak inside the suite: 8 simulated users for 2 minutes with a hub restart, slurmctld stopped and a
slurmd killed (tests/soak; `deploy/devcluster soak` runs the full one), one of them hostile (big notebook reads,
a forged log line, a flood of token offers), and no promise broken: no other user's request the hub answers
itself waited more than 1 s outside a fault, the hub's memory ended within 200 MiB of where it began."""

from __future__ import annotations

import pytest

from tests.soak.driver import Plan, run
from tests.soak.report import render

# the dev cluster to itself (tests/support/lanes.py): restarts the hub, stops slurmctld, kills a slurmd; its 1-s promise
pytestmark = pytest.mark.alone


def test_a_short_soak_with_faults_keeps_every_promise():
    report = run(
        Plan(
            minutes=1.5,
            users=8,
            faults=("hub restart", "slurmctld stopped", "slurmd killed"),
            fault_every=25,  # each of the three faults once
            think=(2, 8),
        )
    )
    text = render(report)
    print(text)
    assert len(report.calls) > 100, text  # the users acted ...
    assert {c.op for c in report.calls if c.status in (200, 201, 202, 204)} >= {"start", "stop", "look", "job"}, text
    assert report.faults, text  # ... while the cluster broke under them
    attacked = {a.kind for a in report.attacks if a.count and not a.error}
    assert {"reads", "forge"} <= attacked, text  # ... and one of them attacked (offers: while another's session ran)
    assert report.waits[0] and report.memory[2] is not None, text  # the others' waits and the hub's memory were read
    assert report.violations == [], text

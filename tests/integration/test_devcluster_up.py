"""`deploy/devcluster up` on a dev cluster that is already there: a second `up`, and `up` after `down`.

(From nothing: CI runs `reset`, then `up`, before every suite.  After the hub
or its supervisor was killed: tests/integration/test_ownership.py.)
"""

from __future__ import annotations

import subprocess

import pytest

from tests.support.cluster import ROOT

# the dev cluster to itself (tests/support/lanes.py): runs `up` and `down` of the whole dev cluster
pytestmark = pytest.mark.alone

WORK_WORDS = (
    "restarting",
    "wrote ",
    "issuing",
    "creating",
    "building",
    "installing",
    "pushing",
    "pulling",
    "outlived",
    "making",
)


def dev(command: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["/usr/bin/python3", "-m", "deploy.dev", command], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def daemons() -> dict[str, str]:
    """name -> 'up pid N' as `status` prints it."""
    out = subprocess.run(
        ["/usr/bin/python3", "-m", "deploy.dev", "status"], capture_output=True, text=True, timeout=60, cwd=ROOT
    ).stdout
    return {line.split()[0]: " ".join(line.split()[1:3]) for line in out.splitlines() if line.split()[1:2] == ["up"]}


DAEMONS = {
    "munged",
    "mariadb",
    "slurmdbd",
    "slurmctld",
    "slurmd-node001",
    "slurmd-node002",
    "slurmd-node003",
    "slurmd-node004",
    "slapd",
    "exim4",
    "registry",
    "prometheus",
    "proxy",
    "jupyterhub",
}


def test_a_second_up_changes_nothing(cluster):
    before = daemons()
    assert set(before) == DAEMONS, before
    said = dev("up")
    assert not [w for w in WORK_WORDS if w in said.stdout + said.stderr], said.stdout + said.stderr
    assert daemons() == before  # no daemon restarted
    assert cluster.request("GET", "/hub/api/")[0] == 200


def test_up_after_down_starts_everything_afresh(cluster):
    dev("down")
    assert daemons() == {}
    left = subprocess.run(["pgrep", "-f", "supervisord -c /var/lib/dsportal-dev"], capture_output=True, timeout=30)
    assert left.returncode == 1  # down returns once its supervisor is gone
    said = dev("up")
    assert "outlived" not in said.stdout + said.stderr  # nothing of the old daemons was still running
    assert set(daemons()) == DAEMONS
    assert cluster.request("GET", "/hub/api/")[0] == 200

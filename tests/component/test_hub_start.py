"""A real hub started with settings the portal ignores or that are insecure: it starts, and its log names each."""

from __future__ import annotations

from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data

IGNORED = """\
c.SlurmSpawner.req_partition = "gpu"
c.BatchSpawnerBase.batch_script = "#!/bin/sh\\nsrun jupyterhub-singleuser"
"""


def test_ignored_batchspawner_settings_are_errors_in_the_hub_log(tmp_path):
    portal = config_data(MockSlurm(tmp_path / "mockslurm"))
    portal["ldap"].update(uris=["ldap://ldap1.example.org"], tls="plain")  # passwords in clear text over a network
    hub = HubProcess(tmp_path, portal, before=IGNORED)
    hub.start()
    try:
        assert hub.api("GET", "/")[0] == 200
    finally:
        hub.stop()
    errors = [line for line in hub.log.read_text().splitlines() if "is ignored by DS Portal's spawner" in line]
    assert len(errors) == 2, errors
    assert any(
        "c.SlurmSpawner.req_partition is ignored by DS Portal's spawner: set slurm.partitions in the admin "
        "YAML instead. Remove it." in line
        for line in errors
    ), errors
    assert any("c.BatchSpawnerBase.batch_script is ignored" in line for line in errors), errors
    assert all(line.startswith("[E ") for line in errors), errors  # logged as errors, in the hub's own format
    assert any(
        "INSECURE: ldap.uris ldap://ldap1.example.org: tls: plain sends passwords to a remote directory" in line
        for line in hub.log.read_text().splitlines()
    ), "the hub's start-up log warns"

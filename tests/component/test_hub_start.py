"""A real hub started with batchspawner settings the portal ignores: it starts, and its log names each one."""

from __future__ import annotations

from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data

IGNORED = """\
c.SlurmSpawner.req_partition = "gpu"
c.BatchSpawnerBase.batch_script = "#!/bin/sh\\nsrun jupyterhub-singleuser"
"""


def test_ignored_batchspawner_settings_are_errors_in_the_hub_log(tmp_path):
    hub = HubProcess(tmp_path, config_data(MockSlurm(tmp_path / "mockslurm")), before=IGNORED)
    hub.start()
    try:
        assert hub.api("GET", "/")[0] == 200
    finally:
        hub.stop()
    errors = [line for line in hub.log.read_text().splitlines() if "is ignored by DS Portal's spawner" in line]
    assert len(errors) == 2, errors
    assert any("c.SlurmSpawner.req_partition is ignored by DS Portal's spawner: set slurm.partitions in the admin "
               "YAML instead. Remove it." in line for line in errors), errors
    assert any("c.BatchSpawnerBase.batch_script is ignored" in line for line in errors), errors
    assert all(line.startswith("[E ") for line in errors), errors  # logged as errors, in the hub's own format

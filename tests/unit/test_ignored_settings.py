"""batchspawner settings the portal's spawner ignores are named, with the YAML key to use instead."""

from __future__ import annotations

from traitlets.config import Config

from spawner.hub.session.ignored import ignored_settings


def test_each_ignored_setting_is_named_with_its_replacement():
    c = Config()
    c.SlurmSpawner.req_partition = "gpu"
    c.BatchSpawnerBase.batch_script = "#!/bin/sh\nsrun jupyterhub-singleuser"
    c.Spawner.exec_prefix = "sudo -u {username}"
    c.Spawner.start_timeout = 600  # honoured: not reported
    assert ignored_settings(c) == [
        "c.Spawner.exec_prefix is ignored by DS Portal's spawner: set slurm.sudo (jobs are submitted with "
        "sudo -n -u USER) in the admin YAML instead. Remove it.",
        "c.BatchSpawnerBase.batch_script is ignored by DS Portal's spawner: the job script is the portal's own "
        "(spawner/hub/request/job.sh.j2); put extra #SBATCH lines in slurm.extra_sbatch of the admin YAML. "
        "Remove it.",
        "c.SlurmSpawner.req_partition is ignored by DS Portal's spawner: set slurm.partitions in the admin YAML "
        "instead. Remove it.",
    ]


def test_a_clean_config_reports_nothing_and_is_not_changed():
    c = Config()
    c.JupyterHub.bind_url = "http://127.0.0.1:8000"
    assert ignored_settings(c) == []
    assert set(c) == {"JupyterHub"}  # no empty sections were made by looking

"""The hub's secrets stay in the hub: what its commands inherit, and what sudo keeps for a job."""

from __future__ import annotations

import re
from pathlib import Path

from spawner.hub.request.jobspec import JOB_VARIABLES
from spawner.hub.slurm.client import command_environment

SUDOERS = Path(__file__).resolve().parents[2] / "deploy" / "sudoers.d" / "dsportal"


def test_a_command_inherits_the_path_locale_and_slurm_settings_only():
    hub = {
        "PATH": "/opt/dsportal/venv/bin:/usr/bin",
        "LANG": "C.UTF-8",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
        "JUPYTERHUB_CRYPT_KEY": "k" * 64,
        "CONFIGPROXY_AUTH_TOKEN": "t",
        "DSPORTAL_CONFIG": "/etc/dsportal/p.yaml",
        "HOME": "/var/lib/dsportal",
        "JUPYTERHUB_API_TOKEN": "a",
    }
    assert command_environment(hub) == {
        "PATH": "/opt/dsportal/venv/bin:/usr/bin",
        "LANG": "C.UTF-8",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
        "SLURM_BITSTR_LEN": "0",  # an array's waiting tasks listed whole, never cut at 64 characters
    }


def test_sudo_keeps_exactly_the_jobs_variables_by_name():
    kept = []
    for line in SUDOERS.read_text().splitlines():
        match = re.fullmatch(r'Defaults:dsportal env_keep \+= "([^"]*)"', line.strip())
        if match:
            kept += match.group(1).split()
    assert sorted(kept) == sorted(JOB_VARIABLES)
    assert not [name for name in kept if "*" in name or "?" in name]  # no wildcard: the crypt key is JUPYTERHUB_*

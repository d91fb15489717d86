"""The hub's secrets never reach a process a user owns, on the dev cluster, with the shipped sudoers rule.

The attack: the hub runs `sudo -u alice -- scancel / tail / sbatch --test-only`;
those processes are alice's, and alice reads their /proc/PID/environ.  Here the
hub's own code (spawner.hub.slurm.client, run as the hub's account with a crypt key in
its environment) has alice's `tail` print its own environment: exactly what
alice could read from the process.  Before the fix it held JUPYTERHUB_CRYPT_KEY.
"""

from __future__ import annotations

import subprocess

SECRET = "hub-secret-" + "5" * 40
PROBE = """
import asyncio
from portal.config import load_config
from spawner.hub.slurm.client import SlurmClient
print(asyncio.run(SlurmClient(load_config("/etc/dsportal/portal.yaml").slurm).output_tail("alice", "/proc/self/environ")))
"""


def test_alices_processes_started_by_the_hub_hold_none_of_its_secrets(cluster):
    hub_env = [
        "env",
        "-i",
        "PATH=/opt/dsportal/venv/bin:/usr/bin:/bin",
        f"JUPYTERHUB_CRYPT_KEY={SECRET}",
        f"CONFIGPROXY_AUTH_TOKEN={SECRET}",
        f"JUPYTERHUB_API_TOKEN={SECRET}",
        "SLURM_CONF=/etc/slurm/slurm.conf",
    ]
    done = subprocess.run(
        ["runuser", "-u", "dsportal", "--", *hub_env, "/opt/dsportal/venv/bin/python", "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )  # the installed portal, as the hub runs it
    assert done.returncode == 0, done.stderr
    seen = done.stdout.replace("\0", "\n")
    assert "USER=alice" in seen  # it is alice's process, and this is its environment
    assert SECRET not in seen, seen


def test_the_sudoers_rule_itself_keeps_no_hub_secret():
    # whatever the hub's code hands sudo, the rule keeps only the job's variables by name (no JUPYTERHUB_*)
    done = subprocess.run(
        [
            "runuser",
            "-u",
            "dsportal",
            "--",
            "env",
            f"JUPYTERHUB_CRYPT_KEY={SECRET}",
            f"JUPYTERHUB_API_TOKEN={SECRET}-job",
            "sudo",
            "-n",
            "-u",
            "alice",
            "--",
            "/usr/bin/tail",
            "-n",
            "5",
            "--",
            "/proc/self/environ",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    seen = done.stdout.replace("\0", "\n")
    assert f"JUPYTERHUB_CRYPT_KEY={SECRET}" not in seen
    assert f"JUPYTERHUB_API_TOKEN={SECRET}-job" in seen  # the job's own variable, kept by name

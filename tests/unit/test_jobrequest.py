"""The one sbatch builder (spawner/hub/request/jobrequest.py): every job the portal submits, by equality."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spawner.hub.request.jobrequest import Account, JobRequest, sbatch_argv

SLURM = SimpleNamespace(sudo="/usr/bin/sudo", sbatch="/usr/bin/sbatch", account="", qos="", reservation="maint")
ALICE = Account("alice", "/home/alice")


def test_every_option_a_job_may_ask_for_in_its_one_order():
    job = JobRequest(
        user=ALICE,
        name="grid.ipynb",
        partition="sxm2",
        time="02:00:00",
        cpus=16,
        memory="96G",
        output="/home/alice/.dsportal-sweep-%A_%a.log",
        chdir="/home/alice/w",
        gpus=2,
        gpu_type="a100",
        nodes=2,
        account="nlp",
        qos="short",
        env_names=("HOME", "USER"),
        requeue=False,
        warning_seconds=600,
        signal="USR2",
        array="0-11%4",
        comment="dsportal-start:ab12",
    )
    assert sbatch_argv(SLURM, job) == [
        "/usr/bin/sudo", "-n", "--preserve-env=HOME,USER", "-u", "alice", "--",
        "/usr/bin/sbatch", "--parsable", "--no-requeue", "--job-name=grid.ipynb",
        "--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=16", "--mem=96G", "--gres=gpu:a100:2",
        "--time=02:00:00", "--partition=sxm2", "--signal=B:USR2@600",
        "--account=nlp", "--qos=short", "--reservation=maint",
        "--array=0-11%4", "--comment=dsportal-start:ab12",
        "--output=/home/alice/.dsportal-sweep-%A_%a.log", "--chdir=/home/alice/w", "--export=ALL",
    ]  # fmt: skip


def test_the_least_a_job_asks_for():
    job = JobRequest(ALICE, "dsportal", "cpu", "01:00:00", 1, "6G", "/home/alice/o-%j.log", "/home/alice")
    assert sbatch_argv(SLURM, job) == [
        "/usr/bin/sudo", "-n", "-u", "alice", "--", "/usr/bin/sbatch", "--parsable", "--job-name=dsportal",
        "--nodes=1", "--ntasks=1", "--cpus-per-task=1", "--mem=6G", "--time=01:00:00", "--partition=cpu",
        "--reservation=maint", "--output=/home/alice/o-%j.log", "--chdir=/home/alice", "--export=ALL",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "forged",
    [{"env_names": ("OK", "BAD,NAME")}, {"gpus": 1, "gpu_type": "a100,gpu:8"}, {"account": "a,b"}, {"qos": "x y"}],
)
def test_nothing_unchecked_reaches_the_command_line(forged):
    job = JobRequest(ALICE, "dsportal", "cpu", "01:00:00", 1, "6G", "/home/alice/o-%j.log", "/home/alice", **forged)
    with pytest.raises(ValueError):
        sbatch_argv(SLURM, job)

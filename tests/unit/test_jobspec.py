"""The exact sbatch arguments and the job script (Slurm's output parsers: tests/unit/test_slurmvocab.py)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest

from portal.config import load_config
from spawner.hub.request.jobrequest import gres_option, sbatch_argv
from spawner.hub.request.jobspec import Account, job_script, session_job
from spawner.hub.request.options import SessionRequest
from spawner.hub.request.resources import resources_for
from spawner.hub.slurm.client import scancel_argv
from spawner.slurmvocab import JobInfo, jobs_argv

ALICE = Account(name="alice", home="/home/alice")


@pytest.fixture
def slurm(a_config_file):
    return load_config(a_config_file).slurm


def test_sbatch_arguments_for_two_gpus(slurm):
    res = resources_for(SessionRequest("sxm2", 2, 8), slurm)
    argv = sbatch_argv(slurm, session_job(slurm, res, ALICE, ["HOME", "JUPYTERHUB_API_TOKEN"]))
    assert argv == [
        slurm.sudo,
        "-n",
        "--preserve-env=HOME,JUPYTERHUB_API_TOKEN",
        "-u",
        "alice",
        "--",
        slurm.sbatch,
        "--parsable",
        "--job-name=dsportal",
        "--nodes=1",
        "--ntasks=1",
        "--cpus-per-task=16",
        "--mem=96G",
        "--gres=gpu:2",
        "--time=08:00:00",
        "--partition=sxm2",
        "--account=ds",
        "--output=/home/alice/.dsportal-session-%j.log",
        "--chdir=/home/alice",
        "--export=ALL",  # never named variables: that runs the login shell
    ]


def test_cpu_only_session_has_no_gres(slurm):
    res = resources_for(SessionRequest("pcie", 0, 2), slurm)
    argv = sbatch_argv(slurm, session_job(slurm, res, ALICE, ["HOME"]))
    assert not [a for a in argv if a.startswith("--gres")]
    assert "--cpus-per-task=4" in argv and "--mem=16G" in argv and "--time=02:00:00" in argv


def test_a_session_of_one_gpu_type_asks_slurm_for_that_type(slurm):
    res = resources_for(SessionRequest("sxm2", 2, 8, "a100"), slurm)
    argv = sbatch_argv(slurm, session_job(slurm, res, ALICE, ["HOME"]))
    assert [a for a in argv if a.startswith("--gres")] == ["--gres=gpu:a100:2"]
    res = resources_for(SessionRequest("sxm2", 1, 8), slurm)
    assert gres_option(res.gpus, res.gpu_type) == "--gres=gpu:1"  # any type
    forged = dataclasses.replace(res, gpu_type="a100,gpu:8")  # never reaches a command line, checked or not
    with pytest.raises(ValueError):
        sbatch_argv(slurm, session_job(slurm, forged, ALICE, ["HOME"]))


def test_env_names_are_checked(slurm):
    res = resources_for(SessionRequest("sxm2", 1, 1), slurm)
    with pytest.raises(ValueError):
        sbatch_argv(slurm, session_job(slurm, res, ALICE, ["OK", "BAD,NAME"]))


def test_job_script(slurm):
    script = job_script(slurm, ALICE, ["/opt/dsportal/venv/bin/dsportal-singleuser", "--debug", "--x=it's"])
    assert script == (
        "#!/bin/bash\n"
        "# DS Portal session of alice: JupyterLab inside this Slurm job.\n"
        "# Written by the hub at each start. The resources (GPUs, cores, memory, time)\n"
        "# are on the sbatch command line; the lines below are the admin's extra options.\n"
        "#SBATCH --constraint=v100\n"
        "set -euo pipefail\n"
        "# Slurm's warning before the time limit comes at once to a session shorter than its window: ignored here,\n"
        "# where it would end the job, and noted from dsportal-singleuser's first line on (spawner/jupyter/clock/clock.py).\n"
        "trap '' USR2\n"
        "# Submitted with umask 077 (sudoers), so Slurm made this job's log private; the\n"
        "# session itself creates files as the user's own sessions do.\n"
        "umask 0022\n"
        "export PATH=/opt/dsportal/venv/bin:/usr/local/bin:/usr/bin:/bin\n"
        'echo "dsportal: job ${SLURM_JOB_ID} of alice on ${SLURMD_NODENAME:-$(hostname)} since $(date +%FT%T.%3N%:z); GPUs: ${CUDA_VISIBLE_DEVICES:-none}"\n'
        "exec /opt/dsportal/venv/bin/dsportal-singleuser --debug '--x=it'\"'\"'s'\n"
    )


def test_query_and_cancel_arguments(slurm):
    assert jobs_argv(slurm.squeue) == [
        slurm.squeue,
        "--noheader",
        "--all",
        "--states=all",
        "--format=%i|%u|%T|%N|%S|%e|%r",
    ]
    assert scancel_argv(slurm, "alice", "3") == [slurm.sudo, "-n", "-u", "alice", "--", slurm.scancel, "3"]


@pytest.mark.parametrize("order, place", [(["5", "7", "9"], 2), (["7"], 1), ([], None), (["5"], None)])
def test_place_in_queue(order, place):
    from spawner.hub.session.progress import place_in_queue

    assert place_in_queue(order, "7") == place


@pytest.mark.parametrize(
    "n, words",
    [
        (1, "1st"),
        (2, "2nd"),
        (3, "3rd"),
        (4, "4th"),
        (11, "11th"),
        (12, "12th"),
        (21, "21st"),
        (102, "102nd"),
        (113, "113th"),
    ],
)
def test_ordinal(n, words):
    from spawner.hub.session.progress import ordinal

    assert ordinal(n) == words


def test_start_progress_in_words():
    from spawner.hub.session.progress import start_progress

    assert start_progress("", None, "sxm2", 0, False) == {
        "progress": 10,
        "message": "Submitting your session to Slurm...",
    }
    queued = JobInfo("7", "PENDING", "Priority", "")
    assert start_progress("7", queued, "sxm2", 0, False)["message"] == (
        "Job 7 is queued on sxm2: other jobs are ahead in the queue (Priority). Slurm gives no start estimate yet."
    )
    odd = JobInfo("7", "PENDING", "SomethingNew", "")
    assert start_progress("7", odd, "sxm2", 0, False)["message"] == (
        "Job 7 is queued on sxm2: waiting in the queue (SomethingNew). Slurm gives no start estimate yet."
    )
    waiting = JobInfo("7", "PENDING", "Resources", "", "alice", "2026-11-22T11:05:00")
    assert start_progress("7", waiting, "sxm2", 0, False, place=2)["message"] == (
        "Job 7 is queued on sxm2: waiting for GPUs to become free (Resources). It is 2nd in line there. "
        "Slurm expects it to start at 2026-11-22 11:05."
    )
    about_to = JobInfo("7", "PENDING", "None", "")
    assert (
        start_progress("7", about_to, "sxm2", 0, False)["message"] == "Job 7 is queued on sxm2: about to be scheduled."
    )
    running = JobInfo("7", "RUNNING", "", "node001")
    assert [
        start_progress("7", running, "sxm2", port, up)["progress"]
        for port, up in ((0, False), (9000, False), (9000, True))
    ] == [50, 70, 90]


NOW = datetime(2026, 11, 22, 16, 0)


@pytest.mark.parametrize(
    "info, words",
    [
        (JobInfo("7", "TIMEOUT", "", "node001"), "Your session reached its time limit (8 h) at 14:05."),
        (JobInfo("7", "CANCELLED", "TimeLimit", ""), "Your session reached its time limit (8 h) at 14:05."),
        (
            JobInfo("7", "PREEMPTED", "", "node001"),
            "Your session was preempted at 14:05: Slurm gave its resources to a job of higher priority.",
        ),
        (JobInfo("7", "NODE_FAIL", "", "node002"), "Your session ended at 14:05 because its node (node002) failed."),
        (
            JobInfo("7", "CANCELLED", "", "node001"),
            "Your session was cancelled outside the portal at 14:05 (by a cluster admin, or with scancel).",
        ),
        (
            JobInfo("7", "OUT_OF_MEMORY", "", "node001"),
            "Your session ran out of memory and ended at 14:05; start it with more GPUs (each brings memory).",
        ),
        (
            JobInfo("7", "FAILED", "NonZeroExitCode", "node001"),
            "Your session ended at 14:05 with an error (failed); its log is ~/.dsportal-session-7.log.",
        ),
        (JobInfo("7", "COMPLETING", "TimeLimit", "node001"), "Your session reached its time limit (8 h) at 14:05."),
        (JobInfo("7", "COMPLETING", "", "node001"), "Your session ended at 14:05."),
        (None, "Your session (job 7) ended at 14:05 or earlier; Slurm no longer lists it."),
    ],
)
def test_why_a_session_ended_in_words(info, words):
    from spawner.hub.session.progress import ended_words

    assert ended_words("7", info, "8 h", datetime(2026, 11, 22, 14, 5), NOW) == words


def test_an_end_on_another_day_says_the_day():
    from spawner.hub.session.progress import ended_words

    assert ended_words("7", JobInfo("7", "TIMEOUT"), "1 min", datetime(2026, 11, 21, 23, 59), NOW) == (
        "Your session reached its time limit (1 min) on 21 Nov at 23:59."
    )


def test_a_starts_comment_comes_after_the_sites_options(slurm):
    res = resources_for(SessionRequest("sxm2", 1, 1.0), slurm)
    site = sbatch_argv(slurm, session_job(slurm, res, ALICE, ["HOME"]))
    argv = sbatch_argv(slurm, session_job(slurm, res, ALICE, ["HOME"], comment="dsportal-start:ab12"))
    assert argv == [*site[:-3], "--comment=dsportal-start:ab12", *site[-3:]]  # before --output, --chdir, --export
    assert site[-4] == "--account=ds"  # the site's options (its account) come before it

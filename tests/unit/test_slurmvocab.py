"""Slurm's vocabulary (spawner/slurmvocab.py): argument lists and parsers, by equality."""

from __future__ import annotations

import logging
from datetime import datetime

import pytest

from spawner.slurmvocab import (
    Job,
    JobInfo,
    UnreadableAnswer,
    end_time_argv,
    estimate_argv,
    job_argv,
    parse_end,
    parse_job,
    parse_job_id,
    parse_limit,
    parse_partition_max,
    parse_partitions_gres,
    parse_queue_order,
    parse_squeue,
    parse_test_only,
    partition_argv,
    partitions_gres_argv,
    portal_jobs_argv,
    queue_order_argv,
    sinfo_nodes_argv,
    time_limit,
    time_limit_update_argv,
    user_jobs_argv,
)


# --- argument lists --------------------------------------------------------------------
def test_the_hubs_queries():
    assert portal_jobs_argv("/usr/bin/squeue", "dsportal") == [
        "/usr/bin/squeue",
        "--noheader",
        "--states=all",
        "--name=dsportal",
        "--format=%i|%u|%T|%N|%S|%e|%r",
    ]
    assert queue_order_argv("squeue", "sxm2") == [
        "squeue",
        "--noheader",
        "--states=PENDING",
        "--partition=sxm2",
        "--sort=-p,i",
        "--format=%i",
    ]
    assert sinfo_nodes_argv("sinfo") == [
        "sinfo",
        "--noheader",
        "--Node",
        "--Format=NodeList:|,Partition:|,StateCompact:|,Gres:|,GresUsed:|,CPUsState:|,AllocMem:|,Memory:|",
    ]
    assert estimate_argv(["sudo", "-u", "alice", "--", "sbatch", "--parsable"]) == [
        "sudo",
        "-u",
        "alice",
        "--",
        "sbatch",
        "--parsable",
        "--test-only",
    ]


def test_the_sessions_query():
    assert end_time_argv("squeue", "7") == ["squeue", "--noheader", "--jobs=7", "--format=%e"]


def test_the_root_helpers_commands():
    assert job_argv("squeue", "12") == ["squeue", "--noheader", "--jobs=12", "--format=%j|%u|%T|%l|%P"]
    assert partition_argv("scontrol", "sxm2") == ["scontrol", "--oneliner", "show", "partition", "sxm2"]
    assert time_limit_update_argv("/usr/bin/scontrol", "12", 540) == [
        "/usr/bin/scontrol",
        "update",
        "JobId=12",
        "TimeLimit=540",
    ]


def test_the_doctors_queries():
    assert partitions_gres_argv("sinfo") == ["sinfo", "--noheader", "--format=%P|%G"]
    assert user_jobs_argv("squeue", "alice") == ["squeue", "--noheader", "--format=%i", "--user=alice"]


# --- time limits -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "minutes, text",
    [
        (1, "00:01:00"),
        (90, "01:30:00"),
        (480, "08:00:00"),
        (1439, "23:59:00"),
        (1440, "1-00:00:00"),
        (3630, "2-12:30:00"),
    ],
)
def test_time_limits_as_slurm_writes_them(minutes, text):
    assert time_limit(minutes) == text
    assert parse_limit(text) == minutes


@pytest.mark.parametrize(
    "text, minutes",
    [
        ("30", 30),
        ("30:00", 30),
        ("30:01", 31),
        ("8:00:00", 480),
        ("1-00:00:00", 1440),
        ("2-12", 3600),
        ("1-02:03", 1563),
        ("0:00:59", 1),
        ("UNLIMITED", None),
        ("INFINITE", None),
        (" 12:00:00\n", 720),
    ],
)
def test_slurm_times_in_minutes(text, minutes):
    assert parse_limit(text) == minutes


@pytest.mark.parametrize("text", ["", "N/A", "1:2:3:4", "-5", "1-", "soon"])
def test_an_unreadable_time_is_an_error(text):
    with pytest.raises(ValueError):
        parse_limit(text)


# --- the hub's answers -----------------------------------------------------------------
def test_parse_job_id():
    assert parse_job_id("1234\n") == "1234"
    assert parse_job_id("sbatch: warning: something\n1234;cluster\n") == "1234"
    with pytest.raises(ValueError, match="no job id"):
        parse_job_id("Submitted nothing")


def test_parse_squeue():
    out = (
        "12|alice|PENDING|(null)|2026-11-22T11:00:00|2026-11-22T19:00:00|Resources\n"
        "13|bob|RUNNING|node001|2026-11-22T09:00:00|2026-11-22T17:00:00|None\n"
        "14|alice|COMPLETING|node002|N/A|2026-11-22T10:00:00|None\n15_1|carol|RUNNING|x|N/A|N/A|None\n"
        "16|dave|PENDING||N/A|N/A|held by admin | see ticket | 42\n"
        "17|erin|RUNNING|node003|2026-11-22T09:00:00|NONE|None\n"
    )
    assert parse_squeue(out) == {
        # Slurm's estimate of a pending job's start; its end then is no more than a guess
        "12": JobInfo("12", "PENDING", "Resources", "", "alice", "2026-11-22T11:00:00"),
        # a running job's start is no estimate; its end is its time limit
        "13": JobInfo("13", "RUNNING", "", "node001", "bob", end="2026-11-22T17:00:00"),
        "14": JobInfo("14", "COMPLETING", "", "node002", "alice", end="2026-11-22T10:00:00"),
        "16": JobInfo("16", "PENDING", "held by admin | see ticket | 42", "", "dave"),  # a | in the reason
        "17": JobInfo("17", "RUNNING", "", "node003", "erin"),  # no time limit: no end
    }
    jobs = parse_squeue(out)
    states = (jobs["12"].pending, jobs["13"].running, jobs["14"].running, jobs["14"].in_queue)
    assert states == (True, True, False, True)
    assert not JobInfo("1", "TIMEOUT").in_queue
    assert parse_squeue("") == {}


@pytest.mark.parametrize(
    "garbage", ["12|alice|RUNNING\n", "12|alice||node|N/A|N/A|None\n", "12|alice|RUNNING|node|N/A|None\n"]
)
def test_an_unreadable_squeue_line_is_an_error_not_a_missing_job(garbage):
    # a job missing from a listing means "gone": a line that does not read must not make one go missing
    with pytest.raises(UnreadableAnswer):
        parse_squeue("13|bob|RUNNING|node001|N/A|N/A|None\n" + garbage)


@pytest.mark.parametrize(
    "foreign",
    [
        "82+0|bob|PENDING|(null)|N/A|N/A|JobHeldUser\n82+1|bob|PENDING||N/A|N/A|None\n",
        "90_[1-3]|bob|PENDING||N/A|N/A|None\n",
        "noise\n",
        "x1|a|RUNNING|n|N/A|N/A|r\n",
    ],
)
def test_a_line_of_no_portal_job_costs_that_line_only(foreign):
    # any account may submit a job of the portal's name, of any shape: a held hetjob must not blind the hub
    listing = parse_squeue(
        "13|bob|RUNNING|node001|N/A|2026-01-01T10:00:00|None\n"
        + foreign
        + "14|alice|PENDING|(null)|N/A|N/A|Resources\n"
    )
    assert listing == {
        "13": JobInfo("13", "RUNNING", "", "node001", "bob", "", "2026-01-01T10:00:00"),
        "14": JobInfo("14", "PENDING", "Resources", "", "alice", "", ""),
    }


def test_a_skipped_line_is_logged_once(caplog):
    line = "31337_7|mallory|PENDING||N/A|N/A|None\n"
    with caplog.at_level(logging.INFO, logger="JupyterHub.slurm"):
        for _ in range(3):
            assert parse_squeue(line) == {}
    skipped = [r.getMessage() for r in caplog.records if "31337_7" in r.getMessage()]
    assert skipped == [
        "Skipping '31337_7' of mallory in Slurm's listing: named like the portal's jobs, but not one of them"
    ]


def test_the_queue_in_order():
    assert parse_queue_order("  41\n7\n\n12 \n") == ["41", "7", "12"]
    assert parse_queue_order("") == []


def test_an_estimate_from_sbatch_test_only():
    stderr = "sbatch: Job 99999 to start at 2026-11-22T12:00:00 using 8 processors on nodes gpu01 in partition sxm2\n"
    assert parse_test_only(stderr) == "2026-11-22T12:00:00"
    assert (
        parse_test_only("sbatch: error: Batch job submission failed: Requested node configuration is not available")
        is None
    )


# --- the session's, the root helper's and the doctor's answers -------------------------
@pytest.mark.parametrize(
    "out, end",
    [
        ("2026-11-22T14:05:00\n", datetime(2026, 11, 22, 14, 5)),
        ("N/A\n", None),
        ("NONE", None),
        ("", None),
        ("Unknown", None),
    ],
)
def test_the_session_reads_its_end_time(out, end):
    assert parse_end(out) == end


def test_the_helper_reads_squeue_and_scontrol():
    assert parse_job("dsportal|alice|RUNNING|8:00:00|sxm2\n") == Job("dsportal", "alice", "RUNNING", 480, "sxm2")
    assert parse_job("\n") is None
    with pytest.raises(ValueError):
        parse_job("dsportal|alice|RUNNING\n")
    partition = (
        "PartitionName=sxm2 AllowGroups=ALL Default=YES DefaultTime=NONE MaxNodes=UNLIMITED "
        "MaxTime=12:00:00 MinNodes=0 Nodes=node00[1-3] State=UP TotalCPUs=96\n"
    )
    assert parse_partition_max(partition) == 720
    assert parse_partition_max(partition.replace("MaxTime=12:00:00", "MaxTime=UNLIMITED")) is None
    with pytest.raises(ValueError):
        parse_partition_max("PartitionName=sxm2 State=UP")


def test_the_doctor_reads_each_partitions_gres():
    out = "sxm2*|gpu:v100:4(S:0-1)\npcie|gpu:2\npcie|(null)\ncpu|(null)\n"
    assert parse_partitions_gres(out) == {"sxm2": "gpu:v100:4(S:0-1)", "pcie": "gpu:2(null)", "cpu": "(null)"}

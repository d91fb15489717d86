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
    jobs_argv,
    named_jobs_argv,
    parse_end,
    parse_job,
    parse_job_id,
    parse_job_ids,
    parse_limit,
    parse_partition_max,
    parse_partitions_gres,
    parse_queue_order,
    parse_squeue,
    parse_test_only,
    partition_argv,
    partitions_gres_argv,
    queue_order_argv,
    sinfo_nodes_argv,
    time_limit,
    time_limit_update_argv,
    user_jobs_argv,
)


# --- argument lists --------------------------------------------------------------------
def test_the_hubs_queries():
    # every job, by id: a session renamed by its owner stays in the hub's listing; no name is printed; in every
    # partition, those the hub's account may not use among them (tests/integration/test_private_data.py)
    assert jobs_argv("/usr/bin/squeue") == [
        "/usr/bin/squeue",
        "--noheader",
        "--all",
        "--states=all",
        "--format=%i|%u|%T|%N|%S|%e|%r",
    ]
    # the reconciler's candidates: Slurm filters by name, only the ids are printed
    assert named_jobs_argv("/usr/bin/squeue", "dsportal") == [
        "/usr/bin/squeue",
        "--noheader",
        "--all",
        "--states=all",
        "--name=dsportal",
        "--format=%i",
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
        "--all",
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
    # the name, the one field the job's owner chooses, comes last
    assert job_argv("squeue", "12") == ["squeue", "--noheader", "--jobs=12", "--format=%i|%u|%T|%l|%P|%j"]
    assert partition_argv("scontrol", "sxm2") == ["scontrol", "--oneliner", "show", "partition", "sxm2"]
    assert time_limit_update_argv("/usr/bin/scontrol", "12", 540) == [
        "/usr/bin/scontrol",
        "update",
        "JobId=12",
        "TimeLimit=540",
    ]


def test_the_doctors_queries():
    assert partitions_gres_argv("sinfo") == ["sinfo", "--noheader", "--all", "--format=%P|%G"]
    assert user_jobs_argv("squeue", "alice") == ["squeue", "--noheader", "--all", "--format=%i", "--user=alice"]


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


def test_an_array_or_hetjob_line_is_skipped_without_a_word(caplog):
    # the listing holds every job of the cluster: thousands of array tasks must not fill the hub's log
    line = "31337_7|mallory|PENDING||N/A|N/A|None\n82+1|bob|PENDING||N/A|N/A|None\n"
    with caplog.at_level(logging.INFO, logger="JupyterHub.slurm"):
        assert parse_squeue(line) == {}
    assert caplog.records == []


def test_the_ids_of_the_portals_name():
    assert parse_job_ids("12\n 13 \n82+0\n82+1\n90_[1-3]\n\n") == {"12", "13"}
    assert parse_job_ids("") == set()


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
    assert parse_job("12|alice|RUNNING|8:00:00|sxm2|dsportal\n", "12") == Job(
        "dsportal", "alice", "RUNNING", 480, "sxm2"
    )
    assert parse_job("\n", "12") is None
    assert parse_job("", "12") is None
    with pytest.raises(ValueError):
        parse_job("12|alice|RUNNING\n", "12")
    partition = (
        "PartitionName=sxm2 AllowGroups=ALL Default=YES DefaultTime=NONE MaxNodes=UNLIMITED "
        "MaxTime=12:00:00 MinNodes=0 Nodes=node00[1-3] State=UP TotalCPUs=96\n"
    )
    assert parse_partition_max(partition) == 720
    assert parse_partition_max(partition.replace("MaxTime=12:00:00", "MaxTime=UNLIMITED")) is None
    with pytest.raises(ValueError):
        parse_partition_max("PartitionName=sxm2 State=UP")


@pytest.mark.parametrize(
    "name",
    [
        "dsportal|alice|RUNNING|60|sxm2\nx",  # what the old format read as a session on sxm2 (12 h)
        "dsportal\n12|alice|RUNNING|UNLIMITED|sxm2|dsportal",  # a whole forged second record
        "dsportal\n",
        "\ndsportal",
        "|||||",
        "",
    ],
)
def test_a_name_its_owner_chose_forges_no_field_of_the_helpers_answer(name):
    # squeue prints the name last; the job is on the 1-hour debug partition, its limit 60 minutes
    answer = f"12|alice|RUNNING|1:00:00|debug|{name}\n"
    assert parse_job(answer, "12") == Job(name, "alice", "RUNNING", 60, "debug")


@pytest.mark.parametrize(
    "answer",
    [
        "13|alice|RUNNING|1:00:00|debug|dsportal\n",  # another job
        "12_3|alice|RUNNING|1:00:00|debug|dsportal\n",  # an array task
        "12+0|alice|RUNNING|1:00:00|debug|dsportal\n12+1|alice|RUNNING|1:00:00|debug|x\n",  # a hetjob
        "12|alice|RUNNING|1:00:00|dsportal\n",  # a field missing: the name would shift into the partition
        "12|alice||1:00:00|debug|dsportal\n",
        "12|alice\n|RUNNING|1:00:00|debug|dsportal\n",
    ],
)
def test_an_answer_that_is_not_one_plain_job_of_the_id_asked_is_unreadable(answer):
    with pytest.raises(ValueError, match="unreadable squeue answer for job 12"):
        parse_job(answer, "12")


def test_the_doctor_reads_each_partitions_gres():
    out = "sxm2*|gpu:v100:4(S:0-1)\nsxm2*|gpu:a100:4(S:0-1)\npcie|gpu:2\npcie|(null)\ncpu|(null)\n"
    assert parse_partitions_gres(out) == {
        "sxm2": "gpu:v100:4(S:0-1),gpu:a100:4(S:0-1)",
        "pcie": "gpu:2,(null)",
        "cpu": "(null)",
    }


def test_the_mock_slurm_tells_the_jobs_panels_listing_by_its_format():
    # every listing of the hub passes --all: the unit tests' mock squeue tells the shared jobs listing by its format
    from spawner import slurmvocab
    from tests.support import mockslurm

    assert mockslurm.ALL_JOBS_FORMAT == slurmvocab.ALL_JOBS_FORMAT

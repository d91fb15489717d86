"""Every Slurm parser of the portal on what Slurm 22.05 and 24.11 really print, by equality.

tests/unit/fixtures/slurm/VERSION/NAME.txt are the answers to the portal's own argument lists, recorded by
tests/unit/fixtures/slurm/record.py (its argv.txt names each file's command).  22.05: the dev cluster (Debian
12's slurm-wlm 22.05.8) while the tests ran sessions on it.  24.11: Debian 13's slurm-wlm 24.11.5 in a chroot
shaped like the dev cluster (the same nodes, GPU types, partitions, accounts and QOS, no cgroups), with a job
table of every kind: a running session with 2 V100, a held one, jobs pending on resources, on a QOS's MaxWall
and on a used-up allocation, a job array with 2 tasks running and 8 pending, cancelled, failed and completed
jobs, a job with a long name.  Where both clusters hold the same thing (nodes, partitions, QOS, accounts, the
allocations) both answers are held to one expectation; the jobs are each recording's own.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from portal.admin.doctorslurm import cgroup_findings, partition_types
from spawner.hub.slurm.held import HeldJob, parse_held_jobs
from spawner.slurmaccounting import UsedJob, parse_usage
from spawner.slurmassociations import parse_associations, parse_pairs, parse_qos_limits
from spawner.slurmlimits import (
    Group,
    JobCharge,
    parse_assoc_mgr,
    parse_job_charge,
    parse_partition_qos,
    parse_qos_flags,
)
from spawner.slurmprivacy import Privacy, Privilege, parse_privacy, parse_privilege, parse_show_config
from spawner.slurmshares import parse_shares
from spawner.slurmvocab import (
    AccountedJob,
    Job,
    JobInfo,
    ListedJob,
    NodeState,
    parse_accounting,
    parse_all_jobs,
    parse_end,
    parse_job,
    parse_job_id,
    parse_job_ids,
    parse_partition_max,
    parse_partitions_gres,
    parse_queue_order,
    parse_sinfo,
    parse_squeue,
    parse_test_only,
)
from tests.unit.fixtures.slurm import record

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"
VERSIONS = ("22.05", "24.11")


def answer(version: str, name: str) -> str:
    return (FIXTURES / version / f"{name}.txt").read_text()


@dataclass(frozen=True)
class Recording:
    """The recorder's arguments for one version: the session's job and whose association was asked."""

    job: str
    other_job: str
    user: str
    account: str
    days: int  # sacct's window


RECORDINGS = {
    "22.05": Recording(job="76", other_job="78", user="erin", account="vision", days=1),
    "24.11": Recording(job="3", other_job="9", user="alice", account="vision", days=7),
}


def test_the_fixtures_answer_the_portals_argument_lists_of_today():
    """A builder that changed its format makes its fixtures stale: record them again (record.py)."""
    for version, rec in RECORDINGS.items():
        recorded = dict(line.split(": ", 1) for line in answer(version, "argv").splitlines())
        args = argparse.Namespace(
            **{**vars(rec), "allocation_account": "nlp", "partition": "sxm2", "qos": "normal,short,long"},
            job_name="dsportal",
            service_account="dsportal",
        )
        today = {name: shlex.join(argv) for name, argv in record.reads(args).items()}
        assert {name: recorded[name] for name in today} == today


# --- the same on both: the cluster's shape ----------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_sinfo_reads_each_nodes_gpus_cores_and_memory(version):
    nodes = parse_sinfo(answer(version, "sinfo_nodes"))
    shape = {(n.node, n.partition): (n.gpus, n.cpus, n.memory_mib, tuple(t[0] for t in n.gpu_types)) for n in nodes}
    assert shape == {
        ("node001", "sxm2"): (4, 40, 393216, ("v100",)),
        ("node001", "debug"): (4, 40, 393216, ("v100",)),
        ("node002", "sxm2"): (4, 40, 393216, ("a100",)),
        ("node002", "debug"): (4, 40, 393216, ("a100",)),
        ("node003", "cpu"): (0, 40, 393216, ()),
    }
    assert all(n.usable for n in nodes)


@pytest.mark.parametrize("version", VERSIONS)
def test_partitions_and_their_gpu_types(version):
    gres = parse_partitions_gres(answer(version, "sinfo_partitions_gres"))
    assert {p: sorted(g.split(",")) for p, g in gres.items()} == {
        "sxm2": ["gpu:a100:4", "gpu:v100:4"],
        "debug": ["gpu:a100:4", "gpu:v100:4"],
        "cpu": ["(null)"],
    }
    assert partition_types(answer(version, "sinfo_partitions_gres")) == {
        "sxm2": {"a100", "v100"},
        "debug": {"a100", "v100"},
        "cpu": set(),
    }
    partition = answer(version, "scontrol_partition")
    assert (parse_partition_max(partition), parse_partition_qos(partition)) == (720, "")


@pytest.mark.parametrize("version", VERSIONS)
def test_qos_and_associations(version):
    assert parse_qos_limits(answer(version, "sacctmgr_qos")) == {"normal": None, "short": 60, "long": 720}
    associations = parse_associations(answer(version, "sacctmgr_associations"))
    assert [a for a in associations if a[0] in ("alice", "bob", "dsportal")] == [
        ("dsportal", "root", ("normal",)),
        ("alice", "nlp", ("long", "normal", "short")),
        ("alice", "vision", ("long", "normal", "short")),
        ("bob", "vision", ("normal", "short")),
    ]
    pairs = dict(parse_pairs(answer(version, "sacctmgr_default_accounts")))
    assert {u: pairs[u] for u in ("alice", "bob", "carol", "dsportal")} == {
        "alice": "vision",
        "bob": "vision",
        "carol": "vision",
        "dsportal": "root",
    }
    assert "root" in parse_privilege(answer(version, "sacctmgr_privilege"), "dsportal").coordinates
    # slurm.conf's and slurmdbd.conf's PrivateData, both parts of `sacctmgr show config`
    assert parse_privacy(answer(version, "sacctmgr_config")) == Privacy(
        frozenset({"accounts", "jobs", "usage", "users"})
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_assoc_mgr_reads_each_accounts_parent_and_allocation(version):
    user = RECORDINGS[version].user
    associations, qos = parse_assoc_mgr(answer(version, "scontrol_assoc_mgr"))
    assert qos == {}
    assert associations[("vision", "", "")] == Group(None, {}, "root")
    assert associations[("vision", user, "")] == Group(None, {}, "")
    assert parse_assoc_mgr(answer(version, "scontrol_assoc_mgr_parent")) == ({("root", "", ""): Group()}, {})
    nlp = parse_assoc_mgr(answer(version, "scontrol_assoc_mgr_allocation"))[0][("nlp", "", "")]
    assert (nlp.max_wall, nlp.parent, nlp.tres_minutes["gres/gpu"][0]) == (None, "root", 60000)
    assert parse_assoc_mgr(answer(version, "scontrol_qos_mgr")) == (
        {},
        {"normal": Group(), "short": Group(60), "long": Group(720)},
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_sshare_reads_the_allocations(version):
    shares = parse_shares(answer(version, "sshare"))
    limits = {account: a.limit_minutes for account, a in shares.allocations.items()}
    assert limits == {"root": None, "nlp": 60000.0, "spent": 0.0, "vision": None}
    assert {("alice", "nlp"), ("alice", "vision"), ("bob", "vision"), ("carol", "spent")} <= set(shares.fairshare)


@pytest.mark.parametrize("version", VERSIONS)
def test_show_config(version):
    config = parse_show_config(answer(version, "scontrol_show_config"))
    assert config["SLURM_VERSION"].startswith(version + ".")
    assert (config["ClusterName"], config["PrivateData"]) == ("dsportal", "accounts,jobs,usage,users")
    assert "gres/gpu:a100" in config["AccountingStorageTRES"].split(",")


# --- each recording's own jobs ------------------------------------------------------------------------
DOWN = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
SQUEUE = {
    "22.05": {
        "76": JobInfo("76", "RUNNING", "", "node001", "erin", "", "2026-11-29T06:00:25"),
        "77": JobInfo("77", "COMPLETED", "", "node002", "alice", "", "2026-11-29T05:00:26"),
        "75": JobInfo("75", "CANCELLED", "", "node001", "alice", "", "2026-11-29T05:00:18"),
        "78": JobInfo("78", "PENDING", "Resources", "", "bob", "2026-11-29T06:00:25"),
        "79": JobInfo("79", "PENDING", DOWN, "", "frank", "2026-11-29T06:00:25"),
        "80": JobInfo("80", "PENDING", "", "", "grace"),
    },
    "24.11": {
        "3": JobInfo("3", "RUNNING", "", "node001", "alice", "", "2026-11-29T12:39:32"),
        "4": JobInfo("4", "PENDING", "JobHeldUser", "", "alice"),
        "13": JobInfo("13", "PENDING", "Resources", "", "bob", "2026-11-29T08:39:32"),
        "6": JobInfo("6", "PENDING", "QOSMaxWallDurationPerJobLimit", "", "bob"),
        "10": JobInfo("10", "PENDING", "AssocGrpGRESMinutes", "", "carol"),
        "15": JobInfo("15", "COMPLETED", "", "node003", "alice", "", "2026-11-29T04:41:23"),
        "7": JobInfo("7", "CANCELLED", "", "node003", "bob", "", "2026-11-29T04:39:32"),
        "17": JobInfo("17", "CANCELLED", "JobHeldUser", "", "alice", "", "2026-11-29T04:41:49"),
        "2": JobInfo("2", "FAILED", "NonZeroExitCode", "node003", "bob", "", "2026-11-29T04:39:32"),
        "9": JobInfo("9", "RUNNING", "", "node003", "carol", "", "2026-11-29T16:39:32"),
    },
}
PLAIN_IDS = {
    "22.05": {str(n) for n in range(72, 81)},
    "24.11": {"1", "2", "3", "4", "5", "6", "7", "9", "10", "13", "14", "15", "17", "18"},
}


@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_reads_every_plain_job_and_leaves_array_tasks_out(version):
    jobs = parse_squeue(answer(version, "squeue_jobs"))
    assert set(jobs) == PLAIN_IDS[version]
    assert {job_id: jobs[job_id] for job_id in SQUEUE[version]} == SQUEUE[version]


ALL_JOBS = {
    "22.05": [
        ListedJob(
            "76", "erin", "RUNNING", "debug", 1, "node001", "0:02", "59:58", "1:00:00",
            "2026-11-29T05:00:25", "2026-11-29T05:00:25", "",
        ),
        ListedJob(
            "78", "bob", "PENDING", "sxm2", 1, "", "0:00", "", "12:00:00",
            "2026-11-29T05:00:25", "2026-11-29T06:00:25", "Resources",
        ),
        ListedJob(
            "79", "frank", "PENDING", "debug", 1, "", "0:00", "", "1:00:00",
            "2026-11-29T05:00:26", "2026-11-29T06:00:25", DOWN,
        ),
        ListedJob(
            "77", "alice", "COMPLETED", "debug", 1, "node002", "0:01", "", "1:00:00",
            "2026-11-29T05:00:25", "2026-11-29T05:00:25", "",
        ),
    ],
    "24.11": [
        ListedJob(
            "3", "alice", "RUNNING", "sxm2", 1, "node001", "2:51", "7:57:09", "8:00:00",
            "2026-11-29T04:39:31", "2026-11-29T04:39:32", "",
        ),
        ListedJob(
            "8_0", "alice", "RUNNING", "sxm2", 1, "node001", "2:51", "11:57:09", "12:00:00",
            "2026-11-29T04:39:31", "2026-11-29T04:39:32", "",
        ),
        ListedJob(
            "8_[2-9%2]", "alice", "PENDING", "sxm2", 1, "", "0:00", "", "12:00:00",
            "2026-11-29T04:39:31", "", "JobArrayTaskLimit",
        ),
        ListedJob(
            "13", "bob", "PENDING", "sxm2", 1, "", "0:00", "", "4:00:00",
            "2026-11-29T04:39:44", "2026-11-29T08:39:32", "Resources",
        ),
        ListedJob(
            "15", "alice", "COMPLETED", "cpu", 1, "node003", "0:40", "", "10:00",
            "2026-11-29T04:40:42", "2026-11-29T04:40:43", "",
        ),
    ],
}  # fmt: skip
ALL_IDS = {"22.05": PLAIN_IDS["22.05"], "24.11": PLAIN_IDS["24.11"] | {"8_0", "8_1", "8_[2-9%2]"}}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_jobs_panels_listing(version):
    jobs = {job.job_id: job for job in parse_all_jobs(answer(version, "squeue_all_jobs"))}
    assert set(jobs) == ALL_IDS[version]
    assert [jobs[job.job_id] for job in ALL_JOBS[version]] == ALL_JOBS[version]


ACCOUNTED = {
    "22.05": [
        AccountedJob(
            "3", "carol", "sxm2", "CANCELLED", "0:0", "2026-11-29T04:46:01", "", "2026-11-29T04:46:20",
            "00:00:00", 1, "", "08:00:00",
        ),
        AccountedJob(
            "29", "alice", "sxm2", "FAILED", "1:0", "2026-11-29T04:54:35", "2026-11-29T04:54:36",
            "2026-11-29T04:54:54", "00:00:18", 2, "node[001-002]", "00:15:00",
        ),
        AccountedJob(
            "32", "bob", "debug", "CANCELLED", "0:0", "2026-11-29T04:55:00", "2026-11-29T04:55:00",
            "2026-11-29T04:55:06", "00:00:06", 2, "node[001-002]", "00:15:00",
        ),
        AccountedJob(
            "76", "erin", "debug", "RUNNING", "0:0", "2026-11-29T05:00:25", "2026-11-29T05:00:25", "",
            "00:00:02", 1, "node001", "01:00:00",
        ),
        AccountedJob(
            "77", "alice", "debug", "COMPLETED", "0:0", "2026-11-29T05:00:25", "2026-11-29T05:00:25",
            "2026-11-29T05:00:26", "00:00:01", 1, "node002", "01:00:00",
        ),
    ],
    "24.11": [
        AccountedJob(
            "2", "bob", "cpu", "FAILED", "3:0", "2026-11-29T04:39:31", "2026-11-29T04:39:32",
            "2026-11-29T04:39:32", "00:00:00", 1, "node003", "00:05:00",
        ),
        AccountedJob(
            "3", "alice", "sxm2", "RUNNING", "0:0", "2026-11-29T04:39:31", "2026-11-29T04:39:32", "",
            "00:02:51", 1, "node001", "08:00:00",
        ),
        AccountedJob(
            "6", "bob", "sxm2", "PENDING", "0:0", "2026-11-29T04:39:31", "", "", "00:00:00", 1, "", "04:00:00",
        ),
        AccountedJob(
            "7", "bob", "cpu", "CANCELLED", "0:0", "2026-11-29T04:39:31", "2026-11-29T04:39:32",
            "2026-11-29T04:39:32", "00:00:00", 1, "node003", "00:30:00",
        ),
        AccountedJob(
            "8_1", "alice", "sxm2", "RUNNING", "0:0", "2026-11-29T04:39:31", "2026-11-29T04:39:32", "",
            "00:02:51", 1, "node001", "12:00:00",
        ),
        AccountedJob(
            "15", "alice", "cpu", "COMPLETED", "0:0", "2026-11-29T04:40:42", "2026-11-29T04:40:43",
            "2026-11-29T04:41:23", "00:00:40", 1, "node003", "00:10:00",
        ),
    ],
}  # fmt: skip
ACCOUNTED_IDS = {
    "22.05": {str(n) for n in range(1, 79)} - {"8", "15"},
    "24.11": {"1", "2", "3", "5", "6", "7", "8_0", "8_1", "9", "10", "13", "14", "15"},
}


@pytest.mark.parametrize("version", VERSIONS)
def test_sacct_accounting(version):
    jobs = {job.job_id: job for job in parse_accounting(answer(version, "sacct_accounting"))}
    assert set(jobs) == ACCOUNTED_IDS[version]
    assert [jobs[job.job_id] for job in ACCOUNTED[version]] == ACCOUNTED[version]


USED = {
    "22.05": [
        UsedJob(
            "28", "alice", "sxm2", "COMPLETED", "2026-11-29T04:53:59", "2026-11-29T04:54:35", 36, 11.846, 32, 4,
            196608, 226, "vision", "a100+v100",
        ),
        UsedJob(
            "29", "alice", "sxm2", "FAILED", "2026-11-29T04:54:36", "2026-11-29T04:54:54", 18, 10.445, 32, 4,
            196608, 225, "vision", "a100+v100",
        ),
        UsedJob("76", "erin", "debug", "RUNNING", "2026-11-29T05:00:25", "", 3, 0.0, 8, 1, 49152, 0, "vision", "v100"),
        UsedJob(
            "77", "alice", "debug", "COMPLETED", "2026-11-29T05:00:25", "2026-11-29T05:00:26", 1, 0.004, 1, 0,
            393216, 3, "vision", "",
        ),
    ],
    "24.11": [
        UsedJob(
            "3", "alice", "sxm2", "RUNNING", "2026-11-29T04:39:32", "", 171, 0.0, 16, 2, 98304, 0, "vision", "v100",
        ),
        UsedJob("5", "bob", "sxm2", "RUNNING", "2026-11-29T04:39:32", "", 171, 0.0, 8, 3, 49152, 0, "vision", "a100"),
        UsedJob("8_0", "alice", "sxm2", "RUNNING", "2026-11-29T04:39:32", "", 171, 0.0, 4, 1, 16384, 0, "nlp", "v100"),
        UsedJob(
            "15", "alice", "cpu", "COMPLETED", "2026-11-29T04:40:43", "2026-11-29T04:41:23", 40, 0.26, 2, 0, 1024, 308,
            "nlp", "",
        ),
        UsedJob("10", "carol", "debug", "PENDING", "", "", 0, 0.0, 0, 0, 0, 0, "spent", ""),
    ],
}  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_sacct_usage_folds_each_jobs_steps_in(version):
    jobs = {job.job_id: job for job in parse_usage(answer(version, "sacct_usage"))}
    assert set(jobs) == ACCOUNTED_IDS[version]
    assert [jobs[job.job_id] for job in USED[version]] == USED[version]


SESSION = {
    "22.05": {
        "job": Job("dsportal", "erin", "RUNNING", 60, "debug"),
        "other": Job("acct-00ba0e99", "bob", "PENDING", 720, "sxm2"),
        "end": datetime(2026, 11, 29, 6, 0, 25),
        "qos": "normal",
        "charge": JobCharge("normal", "vision", {"cpu": 8, "node": 1, "billing": 8, "gres/gpu": 1, "gres/gpu:v100": 1}),
        "held": {"76": HeldJob(1, "dsportal-start:e13c92ab0fc326c3")},
        "named": {"72", "73", "74", "75", "76", "79", "80"},
        "mine": ["76"],
        "order": ["78"],
    },
    "24.11": {
        "job": Job("dsportal", "alice", "RUNNING", 480, "sxm2"),
        "other": Job(
            "preprocess-the-imagenet-21k-shards-for-the-vision-transformer-baseline-run-0042",
            "carol",
            "RUNNING",
            720,
            "cpu",
        ),
        "end": datetime(2026, 11, 29, 12, 39, 32),
        "qos": "normal",
        "charge": JobCharge(
            "normal", "vision", {"cpu": 16, "node": 1, "billing": 16, "gres/gpu": 2, "gres/gpu:v100": 2}
        ),
        "held": {
            "3": HeldJob(2, "dsportal-start:4f2a"),
            "4": HeldJob(1, "dsportal-start:9c1e"),
        },
        "named": {"3", "4", "6", "10", "17", "18"},
        "mine": ["8_[2-9%2]", "4", "3", "8_0", "8_1"],
        "order": ["6", "8_[2-9%2]", "13", "4"],
    },
}


@pytest.mark.parametrize("version", VERSIONS)
def test_one_sessions_answers(version):
    rec, expected = RECORDINGS[version], SESSION[version]
    assert parse_job(answer(version, "squeue_job"), rec.job) == expected["job"]
    assert parse_job(answer(version, "squeue_job_other"), rec.other_job) == expected["other"]
    assert parse_end(answer(version, "squeue_end_time")) == expected["end"]
    assert answer(version, "squeue_job_qos").strip() == expected["qos"]
    assert parse_job_charge(answer(version, "squeue_job_charge")) == expected["charge"]
    assert parse_held_jobs(answer(version, "squeue_held_jobs")) == expected["held"]
    assert parse_job_ids(answer(version, "squeue_named_jobs")) == expected["named"]
    assert answer(version, "squeue_user_jobs").split() == expected["mine"]
    assert parse_queue_order(answer(version, "squeue_queue_order")) == expected["order"]


# --- what differs -------------------------------------------------------------------------------------------
def field(version: str, name: str, line_start: str, index: int) -> str:
    """Field `index` of the recorded line of `name` that starts with `line_start`."""
    return next(line for line in answer(version, name).splitlines() if line.startswith(line_start)).split("|")[index]


def test_what_24_11_prints_otherwise_is_read_alike():
    # a GPU-less node's GresUsed: 'gpu:0' in 22.05, '(null)' in 24.11; no GPUs either way
    assert (field("22.05", "sinfo_nodes", "node003", 4), field("24.11", "sinfo_nodes", "node003", 4)) == (
        "gpu:0",
        "(null)",
    )
    for version in VERSIONS:
        node003 = next(n for n in parse_sinfo(answer(version, "sinfo_nodes")) if n.node == "node003")
        assert (node003.gpus, node003.gpus_used, node003.gpu_types) == (0, 0, ())
    # a job's GRES (squeue %b): 'gres:gpu:1' in 22.05, 'gres/gpu:v100:2' in 24.11 (read in test_one_sessions_answers)
    assert field("22.05", "squeue_held_jobs", "76|", 2) == "gres:gpu:1"
    assert field("24.11", "squeue_held_jobs", "3|", 2) == "gres/gpu:v100:2"
    # a job that never started: its Start is 'None' in 22.05's sacct, 'Unknown' in 24.11's; "" either way
    assert (field("22.05", "sacct_accounting", "3|", 6), field("24.11", "sacct_accounting", "6|", 6)) == (
        "None",
        "Unknown",
    )
    # an association's place in the tree: Lft=N in 22.05, Lineage=/vision/ in 24.11 (its parent is read alike)
    assert " Lft=12 " in answer("22.05", "scontrol_assoc_mgr")
    assert " Lineage=/vision/ " in answer("24.11", "scontrol_assoc_mgr")
    # 24.11 marks a node planned for a pending job's start with '-': it still takes jobs
    node002 = next(n for n in parse_sinfo(answer("24.11", "sinfo_nodes")) if n.node == "node002")
    assert node002 == NodeState(
        "node002", "debug", "mix-", 4, 3, 32, 40, 393216, 49152, (("a100", 4, 3),), gpus_held=(0, 1, 2)
    )
    assert node002.usable


def test_qos_flags_and_confinement():
    assert parse_qos_flags(answer("22.05", "sacctmgr_qos_flags")) == {
        "normal": frozenset(),
        "short": frozenset(),
        "long": frozenset(),
    }
    assert parse_qos_flags(answer("24.11", "sacctmgr_qos_flags")) == {
        "normal": frozenset(),
        "short": frozenset(),
        "long": frozenset({"OverPartQOS"}),
    }
    # the dev cluster confines its jobs; the chroot has no cgroups (proctrack/linuxproc, task/none)
    assert all(ok for _, ok, _ in cgroup_findings(parse_show_config(answer("22.05", "scontrol_show_config"))))
    confined = cgroup_findings(parse_show_config(answer("24.11", "scontrol_show_config")))
    assert [ok for _, ok, _ in confined] == [False, False, False, False, False]
    assert confined[1][2].startswith("TaskPlugin=(null): no job is confined")


def test_privilege():
    """The dev cluster's hub account coordinates every account; the chroot's, root only."""
    assert parse_privilege(answer("22.05", "sacctmgr_privilege"), "dsportal") == Privilege(
        "None", frozenset({"nlp", "root", "spent", "vision"})
    )
    assert parse_privilege(answer("24.11", "sacctmgr_privilege"), "dsportal") == Privilege("None", frozenset({"root"}))


def test_what_sbatch_says_in_24_11():
    assert parse_test_only(answer("24.11", "sbatch_test_only")) == "2026-11-29T14:42:24"
    assert parse_job_id(answer("24.11", "sbatch_parsable")) == "20"
    assert answer("24.11", "sbatch_submitted") == "Submitted batch job 21\n"
    with pytest.raises(ValueError, match="sbatch printed no job id"):  # the portal asks for --parsable
        parse_job_id(answer("24.11", "sbatch_submitted"))
    assert answer("24.11", "scontrol_time_limit_update") == ""  # success is silent

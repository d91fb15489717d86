"""doctor's Slurm site checks: scontrol's config, the config's GPU types and accounts, judged by pure functions."""

from __future__ import annotations

from portal.admin.doctorslurm import (
    account_findings,
    cgroup_findings,
    parse_show_config,
    partition_types,
    type_findings,
)

CONFINED = """\
Configuration data as of 2026-11-26T18:49:13
ProctrackType           = proctrack/cgroup
TaskPlugin              = task/cgroup,task/affinity
TaskPluginParam         = (null type)
Cgroup Support Configuration:
CgroupPlugin            = cgroup/v1
ConstrainCores          = yes
ConstrainDevices        = yes
ConstrainRAMSpace       = yes

Slurmctld(primary) at head is UP
"""


def test_scontrols_config_is_read_name_by_name():
    assert parse_show_config(CONFINED) == {
        "ProctrackType": "proctrack/cgroup",
        "TaskPlugin": "task/cgroup,task/affinity",
        "TaskPluginParam": "(null type)",
        "CgroupPlugin": "cgroup/v1",
        "ConstrainCores": "yes",
        "ConstrainDevices": "yes",
        "ConstrainRAMSpace": "yes",
    }


def test_a_confined_site_passes_each_cgroup_check():
    assert [(name, ok) for name, ok, _ in cgroup_findings(parse_show_config(CONFINED))] == [
        ("slurm proctrack", True),
        ("slurm task plugin", True),
        ("cgroup ConstrainDevices", True),
        ("cgroup ConstrainCores", True),
        ("cgroup ConstrainRAMSpace", True),
    ]


def test_an_unconfined_site_is_told_each_fix():
    config = {"ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none", "ConstrainDevices": "yes"}
    found = {name: (ok, words) for name, ok, words in cgroup_findings(config)}
    assert found["slurm proctrack"] == (
        False,
        "ProctrackType=proctrack/linuxproc: a process that leaves its job's process group outlives scancel; "
        "set ProctrackType=proctrack/cgroup in slurm.conf",
    )
    assert found["slurm task plugin"][0] is False
    # cgroup.conf's switch alone confines nothing without task/cgroup
    assert found["cgroup ConstrainDevices"] == (
        False,
        "a session can open every GPU of its node, its neighbours' too; set ConstrainDevices=yes in cgroup.conf "
        "(and TaskPlugin=task/cgroup)",
    )


def test_the_types_of_each_partition_come_from_every_gres_line():
    out = "sxm2*|gpu:v100:4(S:0-1)\nsxm2*|gpu:a100:4(S:0-1)\npcie|gpu:2\ncpu|(null)\n"
    assert partition_types(out) == {"sxm2": {"v100", "a100"}, "pcie": {""}, "cpu": set()}


def test_a_label_for_a_type_slurm_lacks_is_named_with_the_types_it_has():
    assert type_findings({"h100": "H100 80 GB", "a100": "A100"}, [], {"a100", "v100"}) == [
        (
            "gpu types",
            False,
            "slurm.gpu_types or slurm.hidden_gpu_types name h100, which no node of the portal's partitions has "
            "(Slurm has a100, v100); fix the type names or gres.conf",
        )
    ]
    assert type_findings({"a100": "A100"}, ["v100"], {"a100", "v100"}) == [("gpu types", True, "Slurm has a100, v100")]
    assert type_findings({}, [], {"a100"}) == [("gpu types", True, "Slurm has a100; shown by their Slurm names: a100")]


def test_an_account_slurm_lacks_and_a_user_in_none_are_refused_in_words():
    pairs = [("alice", "vision"), ("alice", "nlp"), ("bob", "vision")]
    assert account_findings("", "alice", pairs) == [
        ("slurm accounts", True, "2 account(s); alice may charge nlp, vision")
    ]
    assert account_findings("physics", "alice", pairs)[0][1:] == (
        False,
        "slurm.account is 'physics', which Slurm's accounting does not have (it has nlp, vision); fix "
        "slurm.account or add it with sacctmgr",
    )
    assert account_findings("", "carol", pairs)[0][1] is False

"""What Slurm's PrivateData hides from the hub's account, and what doctor says: pure functions, by equality."""

from __future__ import annotations

import pytest

from portal.admin.doctorslurm import privacy_findings
from spawner.slurmprivacy import (
    Privilege,
    hidden_from,
    parse_privilege,
    parse_show_config,
    private_data,
    privilege_argv,
    what_to_change,
)
from spawner.slurmvocab import UnreadableAnswer

ALL = frozenset({"jobs", "usage", "users", "accounts"})


@pytest.mark.parametrize(
    "line, flags",
    [
        ("PrivateData             = none", frozenset()),
        ("PrivateData             = (null)", frozenset()),
        ("PrivateData             = jobs,usage,users,accounts", ALL),
        ("PrivateData             = accounts,jobs,reservations,usage,users", ALL | {"reservations"}),
        ("ProctrackType           = proctrack/cgroup", frozenset()),
    ],
)
def test_private_data_is_read_from_scontrols_config(line, flags):
    assert private_data(parse_show_config(f"Configuration data as of 2026-11-29T04:00:00\n{line}\n")) == flags


def test_the_hub_reads_its_own_rank():
    assert privilege_argv("sacctmgr", "dsportal") == [
        "sacctmgr",
        "--noheader",
        "--parsable2",
        "show",
        "user",
        "dsportal",
        "withcoord",
        "format=User,AdminLevel,Coordinators",
    ]
    assert parse_privilege("dsportal|None|root\n", "dsportal") == Privilege("None", frozenset({"root"}))
    assert parse_privilege("dsportal|Operator|\n", "dsportal") == Privilege("Operator", frozenset())
    assert parse_privilege("dsportal|None|nlp,vision\n", "dsportal") == Privilege("None", frozenset({"nlp", "vision"}))
    assert parse_privilege("", "dsportal") == Privilege()  # an account Slurm's database does not know
    with pytest.raises(UnreadableAnswer):
        parse_privilege("dsportal\n", "dsportal")


@pytest.mark.parametrize(
    "privilege, hidden",
    [
        (Privilege(), ["jobs", "usage", "users", "accounts"]),
        (Privilege("None", frozenset({"vision"})), ["jobs", "usage", "users", "accounts"]),  # not every account
        (Privilege("None", frozenset({"root"})), []),
        (Privilege("Operator"), []),
        (Privilege("Administrator"), []),
    ],
)
def test_what_stays_hidden_from_each_rank(privilege, hidden):
    assert hidden_from(ALL, privilege) == hidden


def test_without_private_data_nothing_is_hidden_from_anyone():
    assert hidden_from(frozenset(), Privilege()) == []


def test_the_admin_is_told_the_two_commands_that_fix_it():
    assert what_to_change("dsportal", ["jobs"]) == (
        "Slurm's PrivateData (jobs) hides from dsportal every other user's job, so running sessions would be taken "
        "for ended. Make dsportal a coordinator of Slurm's root account: `sacctmgr add user dsportal account=root "
        "MaxSubmitJobs=0` then `sacctmgr add coordinator account=root names=dsportal`"
    )
    assert what_to_change("dsportal", []) == ""


def test_doctor_passes_a_coordinator_of_root_and_fails_a_plain_account():
    [(name, ok, words)] = privacy_findings("dsportal", ALL, Privilege("None", frozenset({"root"})))
    assert (name, ok) == ("slurm private data", True)
    assert (
        words == "PrivateData=accounts,jobs,usage,users; dsportal (AdminLevel None, coordinator of root) sees every job"
    )
    [(_, ok, words)] = privacy_findings("dsportal", ALL, Privilege())
    assert not ok and words == what_to_change("dsportal", ["jobs", "usage", "users", "accounts"])
    [(_, ok, words)] = privacy_findings("dsportal", frozenset(), None)
    assert ok and words == "PrivateData is off: dsportal sees every job and account"

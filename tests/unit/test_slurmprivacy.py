"""What Slurm's PrivateData hides from the hub's account, and what doctor says: pure functions, by equality."""

from __future__ import annotations

import asyncio

import pytest

from portal.admin.doctorslurm import privacy_findings
from spawner.hub.slurm.visibility import JobVisibility
from spawner.slurmprivacy import (
    Privacy,
    Privilege,
    charged_accounts,
    hidden_from,
    parse_privacy,
    parse_privilege,
    parse_show_config,
    private_data,
    privilege_argv,
    uncoordinated,
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


SACCTMGR_CONFIG = """\
Configuration data as of 2026-11-29T04:50:35
AccountingStorageType  = accounting_storage/slurmdbd
PrivateData            = none

SlurmDBD configuration:
DbdHost                = head
Parameters             = DisableCoordDBD
PrivateData            = accounts,jobs,usage,users
"""


def test_both_configs_private_data_count():
    """sacctmgr show config: slurm.conf's part (squeue, sshare) and slurmdbd.conf's (sacct, sacctmgr)."""
    assert parse_privacy(SACCTMGR_CONFIG) == Privacy(ALL, coordinators_blind=True)
    assert parse_privacy(SACCTMGR_CONFIG.replace("DisableCoordDBD", "(null)")) == Privacy(ALL, False)


PRIVATE = Privacy(ALL)
PROJECTS = frozenset({"nlp", "vision"})


@pytest.mark.parametrize(
    "privilege, charged, hidden",
    [
        (Privilege(), PROJECTS, ["jobs", "usage", "users", "accounts"]),
        (Privilege(), None, ["jobs", "usage", "users", "accounts"]),
        (Privilege("None", frozenset({"vision"})), PROJECTS, ["jobs", "usage", "users", "accounts"]),  # not nlp
        (Privilege("None", frozenset({"vision"})), None, []),  # the hub cannot tell: doctor does
        (Privilege("None", frozenset({"nlp", "vision"})), PROJECTS, []),
        (Privilege("None", frozenset({"root", "nlp", "vision"})), PROJECTS, []),
        (Privilege("Operator"), PROJECTS, []),
        (Privilege("Administrator"), None, []),
    ],
)
def test_what_stays_hidden_from_each_rank(privilege, charged, hidden):
    assert hidden_from(PRIVATE, privilege, charged) == hidden


def test_a_coordinator_sees_nothing_more_under_disable_coord_dbd_nor_nodes_ever():
    coordinator = Privilege("None", PROJECTS)
    assert hidden_from(Privacy(ALL, coordinators_blind=True), coordinator, PROJECTS) == [
        "jobs",
        "usage",
        "users",
        "accounts",
    ]
    assert hidden_from(Privacy(ALL | {"nodes"}), coordinator, PROJECTS) == ["nodes"]
    assert hidden_from(Privacy(ALL | {"nodes"}), Privilege("Operator"), PROJECTS) == []


def test_without_private_data_nothing_is_hidden_from_anyone():
    assert hidden_from(Privacy(), Privilege(), PROJECTS) == []


def test_the_accounts_to_coordinate_are_the_portal_users():
    pairs = [("alice", "vision"), ("alice", "nlp"), ("root", "root"), ("zoe", "physics"), ("", "vision")]
    assert charged_accounts(pairs, frozenset({"alice", "bob"})) == PROJECTS
    assert charged_accounts(pairs) == PROJECTS | {"physics"}  # no group members listed: every user but root
    assert uncoordinated(Privilege("None", frozenset({"vision"})), PROJECTS) == ["nlp"]


def test_the_admin_is_told_the_command_that_fixes_it():
    assert what_to_change("dsportal", ["jobs"], ["nlp", "vision"], PRIVATE) == (
        "Slurm's PrivateData (jobs) hides from dsportal every other user's job, so running sessions would be taken "
        "for ended. Make dsportal a coordinator of the accounts the portal's users charge: `sacctmgr add "
        "coordinator account=nlp,vision names=dsportal` (docs: admins/slurm, Private job data)"
    )
    blind = what_to_change("dsportal", ["jobs"], [], Privacy(ALL, True))
    assert blind.endswith("Remove DisableCoordDBD from slurmdbd.conf's Parameters: with it no coordinator sees more")
    assert what_to_change("dsportal", [], [], PRIVATE) == ""


def test_doctor_passes_a_coordinator_of_every_project_and_fails_the_rest():
    [(name, ok, words)] = privacy_findings("dsportal", PRIVATE, Privilege("None", PROJECTS), PROJECTS)
    assert (name, ok) == ("slurm private data", True)
    assert words == (
        "PrivateData=accounts,jobs,usage,users; dsportal (AdminLevel None, coordinator of nlp, vision) sees every job"
    )
    [(_, ok, words)] = privacy_findings("dsportal", PRIVATE, Privilege("None", frozenset({"vision"})), PROJECTS)
    assert not ok and "`sacctmgr add coordinator account=nlp names=dsportal`" in words
    [(_, ok, words)] = privacy_findings("dsportal", PRIVATE, Privilege("Operator"), PROJECTS, mcs="privatedata")
    assert ok
    [(_, ok, words)] = privacy_findings("dsportal", PRIVATE, Privilege("None", PROJECTS), PROJECTS, mcs="privatedata")
    assert not ok and words.startswith("MCSParameters=privatedata keeps jobs private by MCS label")
    [(_, ok, words)] = privacy_findings("dsportal", Privacy(), None, None)
    assert ok and words == "PrivateData is off: dsportal sees every job and account"


async def test_every_session_missing_from_one_listing_waits_for_the_same_verdict():
    """Ten sessions polled at once after PrivateData was switched on: the first one's question is in flight when
    the others ask, and none of them may take the old verdict ("nothing hidden") and its session for ended."""
    asked = []

    async def read(argv, parse):
        asked.append(argv[-2] if "config" in argv else "withcoord")
        await asyncio.sleep(0.05)
        return parse("PrivateData = jobs" if "config" in argv else "dsportal|None|\n")

    visibility = JobVisibility(read, "sacctmgr", account="dsportal")
    first = asyncio.ensure_future(visibility.hides_jobs())
    await asyncio.sleep(0.01)  # its question is under way when the other nine ask
    others = await asyncio.gather(*(visibility.hides_jobs() for _ in range(9)))
    verdicts = [await first, *others]
    assert verdicts == [True] * 10
    assert asked == ["show", "withcoord"]  # one question for all ten
    assert visibility.hides_jobs_now

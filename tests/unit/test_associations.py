"""Which Slurm accounts a user may charge: sacctmgr's answers read by equality, and the account option."""

from __future__ import annotations

import pytest

from portal.config import load_config
from spawner.hub.request.jobrequest import sbatch_argv
from spawner.hub.request.jobspec import Account, session_job
from spawner.hub.request.options import AccountFacts, OptionsError, SessionRequest, parse_options
from spawner.hub.request.resources import resources_for
from spawner.hub.slurm.associations import Accounts, accounts_of
from spawner.slurmassociations import (
    associations_argv,
    default_accounts_argv,
    parse_associations,
    parse_pairs,
    parse_qos_limits,
    qos_argv,
)
from spawner.slurmshares import Allocation, parse_shares, shares_argv
from spawner.slurmvocab import UnreadableAnswer

# `sacctmgr --noheader --parsable2 show associations format=User,Account,QOS`: an account's own rows have no user
ASSOCIATIONS = (
    "|root|normal\nroot|root|normal\n|vision|normal\nalice|vision|long,normal,short\nbob|vision|normal,short\n"
    "|nlp|normal\nalice|nlp|normal\n"
)
# `sacctmgr --noheader --parsable2 show qos format=Name,MaxWall`
QOS = "normal|\nshort|01:00:00\nlong|12:00:00\n"
DEFAULTS = "alice|vision\nbob|vision\nroot|root\n"


@pytest.fixture
def slurm(a_config_file):
    return load_config(a_config_file).slurm


def test_the_queries_and_each_users_accounts_default_first():
    assert associations_argv("sacctmgr") == [
        "sacctmgr",
        "--noheader",
        "--parsable2",
        "show",
        "associations",
        "format=User,Account,QOS",
    ]
    # the default associations, not `show users`: a coordinator lists no other user under PrivateData=users
    assert default_accounts_argv("sacctmgr")[-3:] == ["associations", "onlydefaults", "format=User,Account"]
    assert qos_argv("sacctmgr")[-3:] == ["show", "qos", "format=Name,MaxWall"]
    accounts = accounts_of(parse_associations(ASSOCIATIONS), parse_pairs(DEFAULTS), parse_qos_limits(QOS))
    assert accounts.by_user == {"root": ("root",), "alice": ("vision", "nlp"), "bob": ("vision",)}
    assert accounts.qos[("bob", "vision")] == ("normal", "short")
    assert accounts.max_minutes == {"normal": None, "short": 60, "long": 720}
    assert accounts.to_dict("alice") == {
        "accounts": ["vision", "nlp"],
        "default": "vision",
        "qos": [],
        "allocations": {
            "vision": {"gpu_hours": None, "gpu_hours_left": None, "fairshare": None},
            "nlp": {"gpu_hours": None, "gpu_hours_left": None, "fairshare": None},
        },
    }
    assert accounts.to_dict("eve") == {"accounts": [], "default": "", "qos": [], "allocations": {}}
    # the QOS the admin offers, each with its longest session and the user's accounts that allow it
    assert accounts.to_dict("alice", {"short": "Short", "long": "Long"})["qos"] == [
        {"name": "short", "label": "Short", "max_hours": 1.0, "accounts": ["vision"]},
        {"name": "long", "label": "Long", "max_hours": 12.0, "accounts": ["vision"]},
    ]
    assert accounts.facts("alice") == AccountFacts(
        allowed={"vision": ("long", "normal", "short"), "nlp": ("normal",)},
        max_minutes={"normal": None, "short": 60, "long": 720},
        default_account="vision",
    )
    # a default the associations do not hold is no account of theirs; the others are sorted by name
    odd = accounts_of(parse_associations("carol|b|\ncarol|a|\n"), parse_pairs("carol|z\n"))
    assert odd.of("carol") == ("a", "b")
    assert odd == Accounts({"carol": ("a", "b")}, qos={("carol", "b"): (), ("carol", "a"): ()})


@pytest.mark.parametrize("answer", ["alice|vision|extra\n", "alice\n"])
def test_an_answer_that_does_not_read_is_unreadable(answer):
    with pytest.raises(UnreadableAnswer):
        parse_pairs(answer)


@pytest.mark.parametrize("answer", ["alice|vision\n", "alice|vision|normal|x\n"])
def test_associations_that_do_not_read_are_unreadable(answer):
    with pytest.raises(UnreadableAnswer):
        parse_associations(answer)


@pytest.mark.parametrize("answer", ["short\n", "short|soon\n", "|01:00:00\n"])
def test_qos_limits_that_do_not_read_are_unreadable(answer):
    with pytest.raises(UnreadableAnswer):
        parse_qos_limits(answer)


def test_a_session_charges_the_account_the_user_chose(slurm):
    mine = ("vision", "nlp")
    request = parse_options({"gpus": 2, "account": "nlp"}, slurm, accounts=mine)
    assert request == SessionRequest("sxm2", 2, 8.0, account="nlp")
    res = resources_for(request, slurm)
    assert res.summary() == "2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2, charged to nlp"
    argv = sbatch_argv(slurm, session_job(slurm, res, Account("alice", "/home/alice"), ["HOME"]))
    assert [a for a in argv if a.startswith("--account")] == ["--account=nlp"]  # instead of the admin's (ds)
    default = sbatch_argv(
        slurm, session_job(slurm, resources_for(parse_options({}, slurm), slurm), Account("alice", "/home/a"), [])
    )
    assert [a for a in default if a.startswith("--account")] == ["--account=ds"]
    # Slurm's accounting did not answer: the name's form is checked; sbatch refuses an account the user is not in
    assert parse_options({"account": "other"}, slurm, accounts=None).account == "other"


@pytest.mark.parametrize(
    ("account", "accounts", "message"),
    [
        (
            "physics",
            ("vision", "nlp"),
            'account: you are not in the Slurm account "physics"; yours are vision, nlp (vision is your default).',
        ),
        (
            "nlp",
            (),
            'account: you are not in the Slurm account "nlp"; Slurm lists none for you: leave it empty, or '
            "ask the cluster admins to add you to a project.",
        ),
        ("nlp --qos=high", ("nlp",), 'account: "nlp --qos=high" is not a Slurm account name'),
        ("-nlp", ("-nlp",), 'account: "-nlp" is not a Slurm account name'),
        (["nlp", "vision"], ("nlp",), "Each option may be given once."),
        (7, ("7",), "account: 7 is not a Slurm account name"),
    ],
)
def test_an_account_the_user_is_not_in_is_refused_with_theirs(slurm, account, accounts, message):
    with pytest.raises(OptionsError) as info:
        parse_options({"account": account}, slurm, accounts=accounts)
    assert str(info.value).startswith(message), str(info.value)


FACTS = AccountFacts(
    allowed={"vision": ("long", "normal", "short"), "nlp": ("normal",)},
    max_minutes={"normal": None, "short": 60, "long": 720},
    default_account="vision",
)


@pytest.fixture
def offering(slurm):
    return slurm.model_copy(update={"qos_choices": {"short": "Short: sooner", "long": "Long"}, "account": ""})


def test_a_session_runs_in_the_qos_the_user_chose(offering):
    request = parse_options({"gpus": 1, "hours": 1, "qos": "short"}, offering, facts=FACTS)
    assert request == SessionRequest("sxm2", 1, 1.0, qos="short")
    res = resources_for(request, offering)
    assert res.summary() == "1 GPU · 8 cores · 48 GB RAM · 1 h on sxm2, QOS short"
    argv = sbatch_argv(offering, session_job(offering, res, Account("alice", "/home/alice"), []))
    assert [a for a in argv if a.startswith("--qos")] == ["--qos=short"]
    # none chosen: the admin's slurm.qos (none here): Slurm's association default
    plain = sbatch_argv(
        offering, session_job(offering, resources_for(parse_options({}, offering), offering), Account("a", "/h"), [])
    )
    assert not [a for a in plain if a.startswith("--qos")]
    # Slurm's accounting did not answer: the offer is checked; sbatch refuses the rest
    assert parse_options({"hours": 8, "qos": "short"}, offering, facts=None).qos == "short"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"qos": "high"},
            'qos: "high" is not offered here; choose one of short (Short: sooner), long (Long), or none for the '
            "default.",
        ),
        ({"qos": "short --account=x"}, 'qos: "short --account=x" is not offered here'),
        (
            {"hours": 2, "qos": "short"},
            "qos: short runs sessions of at most 1 h; ask for 1 h or less, or choose another QOS.",
        ),
        (
            {"hours": 1, "qos": "short", "account": "nlp"},
            "qos: the account nlp does not allow the QOS short; leave it empty for the default.",
        ),
    ],
)
def test_a_qos_not_offered_not_allowed_or_too_short_is_refused_in_words(offering, options, message):
    with pytest.raises(OptionsError) as refused:
        parse_options(options, offering, accounts=("vision", "nlp"), facts=FACTS)
    assert str(refused.value).startswith(message)


def test_no_qos_choice_is_offered_unless_the_admin_offers_one(slurm):
    with pytest.raises(OptionsError, match="this portal offers no QOS choice"):
        parse_options({"qos": "short"}, slurm)


# `sshare --noheader --parsable2 --all --format=Account,User,FairShare,GrpTRESMins,GrpTRESRaw`
SHARES = """\
root||||cpu=0,mem=102,gres/gpu=0
 nlp|||gres/gpu=60000|cpu=120,mem=0,gres/gpu=1500
  nlp|alice|0.500000||cpu=120,mem=0,gres/gpu=1500
 spent|||gres/gpu=0|cpu=0,mem=0,gres/gpu=0
  spent|carol|1.000000||cpu=0,mem=0,gres/gpu=0
 vision||||cpu=0,mem=0,gres/gpu=0
  vision|alice|0.750000||cpu=0,mem=0,gres/gpu=0
  vision|carol|0.750000||cpu=0,mem=0,gres/gpu=0
"""


def test_each_accounts_allocation_and_each_users_fairshare_from_one_sshare():
    assert shares_argv("sshare") == [
        "sshare",
        "--noheader",
        "--parsable2",
        "--all",
        "--format=Account,User,FairShare,GrpTRESMins,GrpTRESRaw",
    ]
    shares = parse_shares(SHARES)
    assert shares.allocations == {
        "root": Allocation(None, 0.0),
        "nlp": Allocation(60000.0, 1500.0),
        "spent": Allocation(0.0, 0.0),
        "vision": Allocation(None, 0.0),
    }
    assert shares.fairshare == {
        ("alice", "nlp"): 0.5,
        ("carol", "spent"): 1.0,
        ("alice", "vision"): 0.75,
        ("carol", "vision"): 0.75,
    }
    pairs = "alice|vision|normal\nalice|nlp|normal\ncarol|vision|normal\ncarol|spent|normal\n"
    accounts = accounts_of(parse_associations(pairs), parse_pairs("alice|vision\ncarol|vision\n"), {}, shares)
    assert accounts.to_dict("alice")["allocations"] == {
        "vision": {"gpu_hours": None, "gpu_hours_left": None, "fairshare": 0.75},
        "nlp": {"gpu_hours": 1000.0, "gpu_hours_left": 975.0, "fairshare": 0.5},
    }
    assert accounts.facts("carol").gpu_minutes_left == {"spent": 0.0}


@pytest.mark.parametrize("answer", ["nlp|alice|0.5\n", "nlp||x|gres/gpu=ten|\n", "alice|nlp|half||\n"])
def test_shares_that_do_not_read_are_unreadable(answer):
    with pytest.raises(UnreadableAnswer):
        parse_shares(answer)


def test_a_gpu_session_charging_a_used_up_allocation_is_refused_before_submit(slurm):
    facts = AccountFacts(
        allowed={"vision": ("normal",), "spent": ("normal",)},
        default_account="vision",
        gpu_minutes_left={"spent": 0.0},
    )
    mine = ("vision", "spent")
    with pytest.raises(OptionsError) as refused:
        parse_options({"gpus": 1, "account": "spent"}, slurm, accounts=mine, facts=facts)
    assert str(refused.value) == (
        "account: the GPU allocation of the Slurm account spent is used up; charge vision instead, or ask for 0 GPUs."
    )
    # no GPUs: no GPU-minutes charged; another account: its own allocation
    assert parse_options({"gpus": 0, "account": "spent"}, slurm, accounts=mine, facts=facts).account == "spent"
    assert parse_options({"gpus": 1, "account": "vision"}, slurm, accounts=mine, facts=facts).account == "vision"


def test_associations_of_one_account_per_partition_allow_every_qos_any_of_them_allows():
    rows = parse_associations("alice|vision|normal\nalice|vision|short,normal\nalice|nlp|\n")
    assert accounts_of(rows, []).qos == {("alice", "vision"): ("normal", "short"), ("alice", "nlp"): ()}

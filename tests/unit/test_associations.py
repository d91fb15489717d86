"""Which Slurm accounts a user may charge: sacctmgr's answers read by equality, and the account option."""

from __future__ import annotations

import pytest

from portal.config import load_config
from spawner.hub.request.jobspec import Account, sbatch_argv
from spawner.hub.request.options import OptionsError, SessionRequest, parse_options
from spawner.hub.request.resources import resources_for
from spawner.hub.slurm.associations import (
    Accounts,
    accounts_of,
    associations_argv,
    default_accounts_argv,
    parse_pairs,
)
from spawner.slurmvocab import UnreadableAnswer

# `sacctmgr --noheader --parsable2 show associations format=User,Account`: an account's own rows have no user
ASSOCIATIONS = "|root\nroot|root\n|vision\nalice|vision\nbob|vision\n|nlp\nalice|nlp\n"
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
        "format=User,Account",
    ]
    assert default_accounts_argv("sacctmgr")[-2:] == ["users", "format=User,DefaultAccount"]
    accounts = accounts_of(parse_pairs(ASSOCIATIONS), parse_pairs(DEFAULTS))
    assert accounts == Accounts({"root": ("root",), "alice": ("vision", "nlp"), "bob": ("vision",)})
    assert accounts.to_dict("alice") == {"accounts": ["vision", "nlp"], "default": "vision"}
    assert accounts.to_dict("eve") == {"accounts": [], "default": ""}
    # a default the associations do not hold is no account of theirs; the others are sorted by name
    odd = accounts_of(parse_pairs("carol|b\ncarol|a\n"), parse_pairs("carol|z\n"))
    assert odd.of("carol") == ("a", "b")


@pytest.mark.parametrize("answer", ["alice|vision|extra\n", "alice\n"])
def test_an_answer_that_does_not_read_is_unreadable(answer):
    with pytest.raises(UnreadableAnswer):
        parse_pairs(answer)


def test_a_session_charges_the_account_the_user_chose(slurm):
    mine = ("vision", "nlp")
    request = parse_options({"gpus": 2, "account": "nlp"}, slurm, accounts=mine)
    assert request == SessionRequest("sxm2", 2, 8.0, account="nlp")
    res = resources_for(request, slurm)
    assert res.summary() == "2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2, charged to nlp"
    argv = sbatch_argv(slurm, res, Account("alice", "/home/alice"), ["HOME"])
    assert [a for a in argv if a.startswith("--account")] == ["--account=nlp"]  # instead of the admin's (ds)
    default = sbatch_argv(slurm, resources_for(parse_options({}, slurm), slurm), Account("alice", "/home/a"), [])
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

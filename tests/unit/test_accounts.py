"""Who may run a session: root, system accounts, deny-listed and group-less accounts are refused."""

from __future__ import annotations

import re

import pytest

from portal.settings import SlurmSettings
from spawner.hub.request.accounts import AccountRefused, UnixAccount, lookup, refusal

SLURM = SlurmSettings(min_uid=1000, deny_users=["root", "ops"], user_groups=["datasci"])


def account(name="alice", uid=5001, groups=("alice", "datasci")) -> UnixAccount:
    return UnixAccount(name=name, uid=uid, home=f"/home/{name}", shell="/bin/bash", groups=frozenset(groups))


SYSTEM = (
    "The account {!r} cannot run sessions here: root and system accounts never do. "
    "Log in with your own cluster account."
)


@pytest.mark.parametrize(
    "who, expected",
    [
        (account(), None),
        (account("root", 0, ["root", "datasci"]), SYSTEM.format("root")),
        (account("daemon", 1, ["daemon", "datasci"]), SYSTEM.format("daemon")),
        (account("slurm", 64030, ["slurm", "datasci"]), None),  # a high uid in the group: allowed by uid
        (account("ops", 5009), SYSTEM.format("ops")),  # deny list, whatever the uid
        (account("dsportal", 999, ["dsportal", "datasci"]), SYSTEM.format("dsportal")),
        (
            account("eve", 5010, ["eve"]),
            "The account 'eve' is not in a group of portal users (datasci); ask the cluster admins for access.",
        ),
    ],
)
def test_refusal(who, expected):
    assert refusal(who, SLURM) == expected


def test_root_is_refused_whatever_min_uid_says():
    with pytest.raises(ValueError):
        SlurmSettings(min_uid=0)  # min_uid starts at 1
    assert refusal(account("root", 0, ["datasci"]), SlurmSettings(min_uid=1, deny_users=[])) is not None


def test_directory_uid_must_match_the_unix_uid():
    assert refusal(account(), SLURM, uid_number=5001) is None
    assert refusal(account(), SLURM, uid_number=0) == (
        "The account 'alice' on the cluster (uid 5001) is not the directory's 'alice' (uidNumber 0); "
        "ask the cluster admins to fix the accounts."
    )


def passwd(name: str, uid: int, gid: int):
    import pwd

    return pwd.struct_passwd((name, "x", uid, gid, name, f"/home/{name}", ""))


def test_lookup_reads_the_account_and_its_groups():
    import grp

    gid = grp.getgrnam("root").gr_gid  # a group every machine has, to name the account's groups by
    found = lookup(
        "alice",
        SLURM.model_copy(update={"user_groups": ["root"]}),
        lambda name: passwd(name, 5001, gid),
        lambda name, base: [base],
    )
    assert found == UnixAccount("alice", 5001, "/home/alice", "/bin/bash", frozenset({"root"}))


@pytest.mark.parametrize(
    "name, uid, words",
    [
        ("../etc", 5001, "The username '../etc' cannot run cluster jobs"),
        ("nobody-here", None, "There is no cluster account 'nobody-here' on the head node"),
        ("daemon", 1, "The account 'daemon' cannot run sessions here"),
    ],
)
def test_lookup_refuses_with_words_for_the_user(name, uid, words):
    def getpwnam(account):
        if uid is None:
            raise KeyError(account)
        return passwd(account, uid, uid)

    with pytest.raises(AccountRefused, match=re.escape(words)):
        lookup(name, SLURM, getpwnam, lambda account, base: [base])

"""Who may run a session: root, system accounts, deny-listed and group-less accounts are refused."""

from __future__ import annotations

import pytest

from portal.settings import SlurmSettings
from spawner.hub.accounts import UnixAccount, refusal

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

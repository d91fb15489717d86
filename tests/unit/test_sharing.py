"""Sharing a session: the request, the admin's rules, the owner's choices and who they let in (pure)."""

from __future__ import annotations

import asyncio
import weakref
from datetime import datetime
from types import SimpleNamespace

import pytest

from portal.settings import SharingSettings
from spawner.hub.sharing.shares import (
    ShareRefused,
    check_rules,
    choice_model,
    chosen,
    live,
    parse_share,
    wanted_users,
    without,
)
from spawner.hub.wiring.hubconfig import portal_roles
from spawner.jupyter.sharing.guests import CLOSED_CODE, GuestIdentityProvider, is_guest, socket_state

NOW = datetime(2026, 11, 23, 12, 0, 0)
RULES = SharingSettings(max_hours=12)
GROUPS = {"alice": {"datasci", "mlteam"}, "bob": {"datasci"}, "dave": {"datasci"}, "erin": {"other"}}


def groups_of(name: str) -> set[str]:
    return GROUPS.get(name, set())


def test_a_share_request_is_read():
    assert parse_share({"server": "train", "user": "bob", "hours": 2}, RULES) == ("train", "user", "bob", 2.0)
    assert parse_share({"group": "datasci"}, RULES) == ("", "group", "datasci", 8.0)  # 8 h unless asked


@pytest.mark.parametrize(
    "body, words",
    [
        ([], 'Send {"server": NAME'),
        ({"user": "bob", "scopes": ["admin"]}, 'Send {"server": NAME'),
        ({"server": 3, "user": "bob"}, "server must be the session's name"),
        ({"user": "bob", "group": "datasci"}, "give either user or group"),
        ({}, "give either user or group"),
        ({"user": "bob;rm -rf"}, "is not a user name"),
        ({"user": "bob", "hours": 13}, "at most 12 (sharing.max_hours)"),
        ({"user": "bob", "hours": 0}, "above 0"),
        ({"user": "bob", "hours": True}, "must be a number"),
    ],
)
def test_a_bad_share_request_is_refused_with_words(body, words):
    with pytest.raises(ShareRefused) as refused:
        parse_share(body, RULES)
    assert words in str(refused.value)


def test_the_admins_rules():
    check_rules(RULES, "alice", "user", "bob", groups_of)
    check_rules(RULES, "alice", "group", "mlteam", groups_of)
    refusals = [
        (SharingSettings(enabled=False), "alice", "user", "bob", "turned off", 403),
        (RULES, "alice", "user", "alice", "your own session", 400),
        (RULES, "alice", "group", "hpcadmin", "only with a group you are in", 400),
        (SharingSettings(groups=["mlteam"]), "bob", "user", "alice", "Only members of mlteam may share", 403),
        (SharingSettings(groups=["datasci"]), "alice", "user", "erin", "erin is not in datasci", 400),
        (SharingSettings(groups=["datasci"]), "alice", "group", "mlteam", "only with the groups datasci", 400),
    ]
    for rules, owner, kind, name, words, status in refusals:
        with pytest.raises(ShareRefused) as refused:
            check_rules(rules, owner, kind, name, groups_of)
        assert words in str(refused.value) and refused.value.status == status, (name, refused.value)


def test_choices_are_added_replaced_removed_and_end_at_their_time():
    choices = chosen([], "user", "bob", 1, NOW)
    assert choices == [{"kind": "user", "name": "bob", "expires": "2026-11-23T13:00:00Z"}]
    choices = chosen(chosen(choices, "group", "datasci", 0.5, NOW), "user", "bob", 2, NOW)  # bob again: replaced
    assert [(c["name"], c["expires"]) for c in choices] == [
        ("datasci", "2026-11-23T12:30:00Z"),
        ("bob", "2026-11-23T14:00:00Z"),
    ]
    assert live(choices, datetime(2026, 11, 23, 12, 45)) == [choices[1]]
    assert live([{"kind": "user", "name": "x", "expires": "garbage"}], NOW) == []
    assert without(choices, "group", "datasci") == [choices[1]]


def test_who_gets_in_is_every_named_user_and_each_groups_members_but_the_owner():
    choices = [
        {"kind": "user", "name": "bob", "expires": "2026-11-23T14:00:00Z"},
        {"kind": "group", "name": "datasci", "expires": "2026-11-23T13:00:00Z"},
    ]
    members = {"datasci": {"alice", "bob", "dave"}}
    assert wanted_users(choices, members, "alice") == {
        "bob": "2026-11-23T14:00:00Z",  # the later of his two choices
        "dave": "2026-11-23T13:00:00Z",
    }
    assert wanted_users(choices, {}, "alice") == {"bob": "2026-11-23T14:00:00Z"}  # a group not read: no one


def test_a_choice_as_the_page_shows_it():
    assert choice_model({"kind": "group", "name": "datasci", "expires": "2026-11-23T12:30:00Z"}, "train", NOW) == {
        "server": "train",
        "kind": "group",
        "name": "datasci",
        "group": "datasci",
        "expires": "2026-11-23T12:30:00Z",
        "seconds_left": 1800,
    }


def test_users_get_the_shares_scope_only_where_share_codes_are_allowed():
    assert portal_roles(SimpleNamespace(sharing=SharingSettings())) == []
    assert portal_roles(SimpleNamespace(sharing=SharingSettings(enabled=False, codes=True))) == []
    assert portal_roles(SimpleNamespace(sharing=SharingSettings(codes=True))) == [
        {"name": "user", "scopes": ["self", "shares!user"]}
    ]


def test_who_is_a_guest_of_a_session():
    assert is_guest({"kind": "user", "name": "bob"}, "alice")
    assert not is_guest({"kind": "user", "name": "alice"}, "alice")
    assert not is_guest({"kind": "service", "name": "culler"}, "alice")
    assert not is_guest(None, "alice")


class Connection:
    """Tornado's WebSocketProtocol13 as far as the guests' check uses it."""

    def __init__(self, stream=True):
        self.stream = object() if stream else None  # none: the request never became a websocket (tornado's 400)
        self.server_terminated = self.client_terminated = False

    def is_closing(self):
        return self.server_terminated or self.client_terminated


class Socket:
    """A tornado WebSocketHandler's flags as they are while it opens, is open, and after it closed."""

    def __init__(self):
        self.ws_connection = None  # none yet: jupyter_server prepares the kernel before the handshake
        self._finished = False
        self._on_close_called = False
        self.closed_with = None

    def open(self, connection=None):
        self.ws_connection, self._finished = connection or Connection(), True  # the 101 response finishes it

    def close(self, code=None, reason=None):
        if self.ws_connection is not None:
            if self.ws_connection.stream is None:
                raise AttributeError("'NoneType' object has no attribute 'closed'")  # what tornado raises then
            self.ws_connection.server_terminated = True
            self.ws_connection, self.closed_with = None, code
        self._on_close_called = True


def test_a_websocket_is_open_opening_or_closed():
    socket = Socket()
    assert socket_state(socket) == "opening"
    socket.open()
    assert socket_state(socket) == "open"
    socket.ws_connection.server_terminated = True  # closing: the close frame is sent, the guest not answered yet
    assert socket_state(socket) == "closed"
    socket.close(1000)
    assert socket_state(socket) == "closed"
    refused = Socket()
    refused._finished = True  # its handshake failed (the kernel did not answer): a plain HTTP error
    assert socket_state(refused) == "closed"
    never = Socket()
    never.open(Connection(stream=False))  # no Sec-WebSocket-Key: tornado's 400, a connection without a stream
    assert socket_state(never) == "closed"


def checking(admitted: dict[str, bool]) -> SimpleNamespace:
    """The guests' identity provider as its check uses it, with the hub's verdict on each token."""

    async def still_admitted(token):
        return admitted[token]

    return SimpleNamespace(
        sockets=weakref.WeakKeyDictionary(), seen={"bob": 0.0}, hub_auth=SimpleNamespace(still_admitted=still_admitted)
    )


def test_a_guest_socket_still_opening_at_a_check_is_closed_once_the_share_is_revoked():
    """The race CI lost: a check ran while bob's kernel websocket was connecting its kernel; taken for closed,
    it was forgotten, and stayed open after alice revoked the share."""
    admitted = {"bob-token": True}
    provider = checking(admitted)
    socket = Socket()
    provider.sockets[socket] = ("bob", "bob-token")
    asyncio.run(GuestIdentityProvider.check_guests(provider))  # the check while it opens
    socket.open()
    connection = socket.ws_connection
    admitted["bob-token"] = False  # alice revokes
    asyncio.run(GuestIdentityProvider.check_guests(provider))
    assert socket.closed_with == CLOSED_CODE and socket not in provider.sockets
    assert connection.client_terminated  # nothing bob sends after the close reaches the kernel


def test_a_broken_guest_connection_keeps_no_other_open_after_a_revoke():
    provider = checking({"bob-token": False})
    broken, socket = Socket(), Socket()
    for handler in (broken, socket):
        handler.open()
        provider.sockets[handler] = ("bob", "bob-token")

    def close_that_raises(code=None, reason=None):
        raise AttributeError("'NoneType' object has no attribute 'closed'")

    broken.close = close_that_raises
    asyncio.run(GuestIdentityProvider.check_guests(provider))
    assert socket.closed_with == CLOSED_CODE and not provider.sockets
    assert broken.ws_connection.client_terminated  # takes nothing more from bob either

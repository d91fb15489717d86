"""A session's API token: which server tokens a hub deletes, and what a session takes as its new token.

Hub side (spawner/hub/session/token.py, spawner/hub/sharing/handover.py): the
note JupyterHub gives a server's token, which tokens are stale (pure, and
against JupyterHub's own tables in memory), the offer's proofs.  Session side
(spawner/jupyter/session/token.py, tokenpipe.py, spawner/jupyter/sharing/): what an offer must look like, the new token reaching every holder
and the port keeper, and the answers about tokens a session keeps.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import time
from types import SimpleNamespace

import pytest
from jupyterhub import orm
from tornado import web

from spawner.contract import MAX_OFFER_PROOFS, TOKEN_OFFER_HEADER, offer_proof, offer_proofs, token_digest
from spawner.hub.session import token as hub_tokens
from spawner.hub.sharing import handover as hub_handover
from spawner.jupyter.session import token as session_tokens
from spawner.jupyter.session import tokenpipe
from spawner.jupyter.sharing import guests
from spawner.jupyter.sharing import handover as session_handover


def test_the_note_is_jupyterhubs_for_each_server():
    assert hub_tokens.server_note("/user/alice/", "") == "Server at /user/alice/"
    assert hub_tokens.server_note("/user/alice/", "train") == "Server at /user/alice/train/"
    assert hub_tokens.server_note("/portal/user/a%40b/", "x y") == "Server at /portal/user/a%40b/x%20y/"


def test_stale_tokens_are_all_but_each_running_servers_current_one():
    tokens = [
        (1, 10, "Server at /user/alice/"),  # left by an earlier session of alice's
        (2, 10, "Server at /user/alice/"),  # her running session's
        (3, 10, "Server at /user/alice/gone/"),  # a session that no longer runs
        (4, 20, "Server at /user/bob/"),  # bob's running session, its row unknown (an older record)
        (5, 20, "Server at /user/bob/"),  # ... the newest: his latest start's
        (6, 20, "Server at /user/alice/"),  # bob's token with alice's note: not alice's session's
    ]
    live = {(10, "Server at /user/alice/"): 2, (20, "Server at /user/bob/"): 0}
    assert hub_tokens.stale_tokens(tokens, live) == [1, 3, 4, 6]
    assert hub_tokens.stale_tokens(tokens, {}) == [1, 2, 3, 4, 5, 6]
    assert hub_tokens.stale_tokens([], live) == []


@pytest.fixture
def a_hub_database():
    db = orm.new_session_factory("sqlite:///:memory:")()
    db.add(orm.OAuthClient(identifier="jupyterhub"))
    db.add(orm.OAuthClient(identifier="jupyterhub-user-alice"))
    db.commit()
    yield db
    db.close()


def server_token(db, user, note: str, client: str = "jupyterhub") -> int:
    token = orm.APIToken.new(user=user, note=note, scopes=[], client_id=client)
    return orm.APIToken.find(db, token).id


def test_a_sweep_deletes_the_server_tokens_of_no_running_session(a_hub_database):
    db = a_hub_database
    alice, bob = orm.User(name="alice"), orm.User(name="bob")
    db.add_all([alice, bob])
    db.commit()
    running = orm.Spawner(user=alice, name="", server=orm.Server(base_url="/user/alice/"))
    stopped = orm.Spawner(user=alice, name="old", state={"token_id": 99})
    db.add_all([running, stopped])
    db.commit()
    left = server_token(db, alice, "Server at /user/alice/")
    current = server_token(db, alice, "Server at /user/alice/")
    newer = server_token(db, alice, "Server at /user/alice/")  # say, a replacement this hub made but not saved yet
    ended = server_token(db, alice, "Server at /user/alice/old/")
    personal = server_token(db, alice, "my script")
    browser = server_token(db, alice, "Server at /user/alice/", client="jupyterhub-user-alice")
    bobs = server_token(db, bob, "Server at /user/bob/")
    running.state = {"token_id": current}
    db.commit()

    assert hub_tokens.sweep(db, []) == 4  # the newer one is not the record's
    kept = {row.id for row in db.query(orm.APIToken)}
    assert kept == {current, personal, browser}
    assert {left, newer, ended, bobs}.isdisjoint(kept)

    # a spawner this hub holds knows its current token before the database does
    replacement = server_token(db, alice, "Server at /user/alice/")
    held = SimpleNamespace(
        user=SimpleNamespace(orm_user=alice, base_url="/user/alice/"),
        name="",
        record=SimpleNamespace(token_id=replacement),
    )
    assert hub_tokens.sweep(db, [held]) == 1
    assert {row.id for row in db.query(orm.APIToken)} == {replacement, personal, browser}


def test_an_offered_token_reads_or_is_refused_with_words():
    assert session_handover.parse_offer(b'{"token": "0123456789abcdef0123456789abcdef"}') == "0123456789abcdef" * 2
    for body, words in [
        (b"", "send"),
        (b"not json", "not JSON"),
        (b'{"token": "abc"}', "no token"),
        (b'{"token": "a b c d e f g h"}', "no token"),
        (b'{"token": "0123456789abcdef", "more": 1}', "send"),
        (b'{"token": 12345678901}', "send"),
        (b'{"token": "' + b"a" * 2000 + b'"}', "too long"),
    ]:
        with pytest.raises(ValueError, match=words):
            session_handover.parse_offer(body)


def test_only_an_offer_proven_with_the_held_tokens_digest_is_asked_about(monkeypatch):
    monkeypatch.setattr(session_tokens, "_TOKEN", ["held-token"])
    held = hashlib.sha256(b"held-token").hexdigest()
    proof = hmac.new(held.encode(), b"dsportal-offer:new-token", hashlib.sha256).hexdigest()
    assert offer_proof(held, "new-token") == proof
    assert offer_proofs(["", "aa", held], "new-token") == f"{offer_proof('aa', 'new-token')},{proof}"
    assert session_handover.is_proven("new-token", proof)
    assert session_handover.is_proven("new-token", f"{offer_proof('aa', 'new-token')}, {proof}")  # one of those sent
    assert not session_handover.is_proven("new-token", "")  # a stranger's offer: no proof
    assert not session_handover.is_proven("other-token", proof)  # a proof of another offer
    assert not session_handover.is_proven("new-token", offer_proof(hashlib.sha256(b"a-guess").hexdigest(), "new-token"))
    assert not session_handover.is_proven("new-token", ",".join(["x"] * MAX_OFFER_PROOFS + [proof]))  # past the cap


def a_replaced_session(token: str) -> SimpleNamespace:
    record = SimpleNamespace(token_undelivered=False, held_digests=[], token_sha256=token_digest(token))
    return SimpleNamespace(api_token=token, record=record, server=SimpleNamespace(url="http://node:1/user/a/"))


def replaced_by(spawner, new: str) -> None:  # replace() without JupyterHub's tables
    hub_handover.keep_proof_key(spawner)
    spawner.api_token, spawner.record.token_undelivered = new, True
    spawner.record.token_sha256 = token_digest(new)


def accepted(spawner, held: str, offered: str) -> bool:
    """Whether a session holding `held` finds the hub's offer of `offered` proven."""
    header = hub_handover.delivery_request(spawner, offered).headers[TOKEN_OFFER_HEADER]
    proofs = header.split(",")
    return any(p == offer_proof(token_digest(held), offered) for p in proofs) and len(proofs) <= MAX_OFFER_PROOFS


def test_the_hubs_offer_is_proven_for_every_token_the_session_may_hold():
    spawner = a_replaced_session("token-0")
    replaced_by(spawner, "token-1")
    assert accepted(spawner, "token-0", "token-1")
    # a second share ended before the session's answer about token-1 came (or that answer was lost): the session
    # holds token-0 or token-1, and either way takes token-2
    replaced_by(spawner, "token-2")
    assert accepted(spawner, "token-0", "token-2") and accepted(spawner, "token-1", "token-2")
    assert not accepted(spawner, "token-9", "token-2")
    # the answer about token-1 comes now: token-2 stays to be handed over, proven with token-1 only
    hub_handover.took(spawner, "token-1")
    assert spawner.record.token_undelivered and spawner.record.held_digests == [token_digest("token-1")]
    assert accepted(spawner, "token-1", "token-2") and not accepted(spawner, "token-0", "token-2")
    hub_handover.took(spawner, "token-0")  # a late answer about an older token says nothing new
    assert spawner.record.held_digests == [token_digest("token-1")]
    # a hub restart (it never holds the token it made before): the next token is proven for token-1 and token-2
    spawner.api_token = ""
    replaced_by(spawner, "token-3")
    assert accepted(spawner, "token-1", "token-3") and accepted(spawner, "token-2", "token-3")
    hub_handover.took(spawner, "token-3")
    assert (spawner.record.token_undelivered, spawner.record.held_digests) == (False, [])
    for n in range(4, 10):  # many replacements unconfirmed: the proofs stay within the cap, the newest kept
        replaced_by(spawner, f"token-{n}")
    assert accepted(spawner, "token-8", "token-9") and len(spawner.record.held_digests) == MAX_OFFER_PROOFS
    assert accepted(spawner, "token-3", "token-9")  # the one it took last stays


def test_strangers_offers_are_counted_in_one_line_a_minute(caplog):
    refusals = session_handover.Refusals(every=3600)
    log = logging.getLogger("offers-test")
    with caplog.at_level(logging.WARNING, "offers-test"):
        for _ in range(500):
            refusals.add(log)
        assert caplog.text == ""
        refusals.since -= 3600
        refusals.add(log)
    assert caplog.text.count("refused 501 token offers") == 1 and refusals.count == 0


class FakeHubAuth:
    def __init__(self, token: str):
        self.api_token = token
        self.cache = {"token:x:y": {"name": "alice"}}


def test_a_taken_token_reaches_every_holder_and_the_keeper(monkeypatch):
    monkeypatch.setattr(session_tokens, "_TOKEN", [])
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "old-token-from-the-start")
    provider_auth, app_auth = FakeHubAuth("old-token-from-the-start"), FakeHubAuth("old-token-from-the-start")
    other = FakeHubAuth("another-services-token")  # not the session's: left alone
    points = {"jupyterhub-singleuser": app_auth, "jupyterlab": None, "other": other}
    serverapp = SimpleNamespace(
        identity_provider=SimpleNamespace(hub_auth=provider_auth),
        extension_manager=SimpleNamespace(
            extension_points={name: SimpleNamespace(app=SimpleNamespace(hub_auth=a)) for name, a in points.items()}
        ),
    )
    reader, writer = os.pipe()
    monkeypatch.setattr(tokenpipe, "_WRITER", [])
    tokenpipe.to_keeper(writer)
    latest = tokenpipe.Latest(reader, "old-token-from-the-start")
    assert session_tokens.is_session_token("old-token-from-the-start")

    session_handover.take(serverapp, "new-token-1")
    session_handover.take(serverapp, "new-token-2")

    assert session_tokens.current() == "new-token-2"
    assert os.environ["JUPYTERHUB_API_TOKEN"] == "old-token-from-the-start"  # kernels inherit the dead one only
    assert (provider_auth.api_token, app_auth.api_token) == ("new-token-2", "new-token-2")
    assert provider_auth.cache == app_auth.cache == {}
    assert other.api_token == "another-services-token" and other.cache
    assert not session_tokens.is_session_token("old-token-from-the-start")
    os.close(writer)  # the server's end
    deadline = time.monotonic() + 5
    while latest() != "new-token-2":
        assert time.monotonic() < deadline, latest()
        time.sleep(0.01)


class AnsweringHubAuth(guests.SessionHubOAuth):
    """The session's HubOAuth with the hub's answers from a dict (a token -> its user model, None: refused)."""

    def __init__(self, answers: dict, **kwargs):
        super().__init__(api_token="session-token", oauth_client_id="jupyterhub-user-alice", **kwargs)
        self.answers = answers
        self.asked: list[str] = []

    async def _api_request(self, method, url, /, **kwargs):
        token = kwargs["headers"]["Authorization"].split()[1]
        self.asked.append(token)
        return self.answers.get(token)


def check(auth: AnsweringHubAuth, token: str):
    return asyncio.run(auth._check_hub_authorization("http://hub/api/user", token, f"token:{token}"))


def test_no_answer_about_a_guest_or_the_sessions_own_token_is_kept(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.setattr(session_tokens, "_TOKEN", ["session-token"])
    alice, bob = {"kind": "user", "name": "alice"}, {"kind": "user", "name": "bob"}
    answers = {"alices-browser": alice, "session-token": alice, "bob-1": bob}
    answers.update({f"bob-flood-{i}": bob for i in range(1001)})
    auth = AnsweringHubAuth(answers)

    check(auth, "bob-1")
    for i in range(1001):  # a guest's flood of fresh tokens: nothing of theirs is remembered to be cleared
        check(auth, f"bob-flood-{i}")
    check(auth, "alices-browser")
    check(auth, "session-token")
    assert len(auth.cache) == 1 and "token:alices-browser" in auth.cache  # the owner's own, as JupyterHub keeps it

    answers["bob-1"] = {"kind": "user", "name": "bob", "scopes": []}  # alice revoked the share
    answers["session-token"] = None  # and the hub replaced the session's token
    assert check(auth, "bob-1")["scopes"] == []  # asked afresh: no cached "admitted"
    assert check(auth, "session-token") is None
    assert auth.asked.count("bob-1") == 2 and auth.asked.count("session-token") == 2
    check(auth, "alices-browser")
    assert auth.asked.count("alices-browser") == 1


class Request:
    """What refuse_ended reads of a request: its token, and JupyterHub's row of it."""

    def __init__(self, token: str | None, row=None):
        self.token, self.row = token, row

    def get_auth_token(self):
        return self.token

    def get_token(self):
        return self.row


def a_session(token: str, state: str) -> SimpleNamespace:
    return SimpleNamespace(
        ready=state == "running",
        pending="spawn" if state == "starting" else ("stop" if state == "stopping" else None),
        record=SimpleNamespace(stopping=state == "stopping"),
        holds_token=lambda t: t == token,
    )


def test_the_portals_apis_take_a_server_token_only_from_a_running_session():
    server_row = SimpleNamespace(user_id=1, client_id="jupyterhub", note="Server at /user/alice/")
    personal_row = SimpleNamespace(user_id=1, client_id="jupyterhub", note="my script")
    sessions = [a_session("live", "running"), a_session("starting", "starting"), a_session("ending", "stopping")]
    for request in (
        Request(None),  # the browser's cookie
        Request("live", server_row),
        Request("starting", server_row),
        Request("personal", personal_row),
    ):
        hub_tokens.refuse_ended(request, sessions)
    for request in (Request("ending", server_row), Request("left-behind", server_row)):
        with pytest.raises(web.HTTPError) as refused:
            hub_tokens.refuse_ended(request, sessions)
        assert refused.value.status_code == 403 and "no longer running" in refused.value.log_message


def test_the_sweep_loop_sweeps_at_once_and_outlives_a_failed_pass(a_hub_database, monkeypatch):
    passes = []

    def sweep(db, spawners):
        passes.append(db)
        if len(passes) == 1:
            raise RuntimeError("the database went away for a moment")
        return 0

    monkeypatch.setattr(hub_tokens, "sweep", sweep)
    databases = iter([None])  # no database yet at the first look

    async def three_passes():
        loop = asyncio.create_task(
            hub_tokens.keep_swept(lambda: [], lambda: next(databases, a_hub_database), every=0.01)
        )
        deadline = time.monotonic() + 30
        while len(passes) < 3:
            assert time.monotonic() < deadline, passes
            await asyncio.sleep(0.01)
        loop.cancel()

    asyncio.run(three_passes())
    assert passes[:3] == [a_hub_database] * 3  # no pass without a database; the failed one did not end the loop


def test_a_token_that_did_not_reach_its_session_is_delivered_again_or_replaced_after_a_restart(
    a_hub_database, monkeypatch
):
    delivered, replaced = [], []

    async def deliver(spawner, token, pauses=hub_handover.DELIVERY_TRIES):
        delivered.append((spawner.name, token))
        return True

    def replace_in_session(spawner):
        replaced.append(spawner.name)
        return None

    monkeypatch.setattr(hub_handover, "deliver", deliver)
    monkeypatch.setattr(hub_handover, "replace_in_session", replace_in_session)

    def session(name: str, token: str, undelivered: bool = True, pending=None) -> SimpleNamespace:
        record = SimpleNamespace(token_undelivered=undelivered, token_id=0)
        return SimpleNamespace(name=name, api_token=token, record=record, ready=True, pending=pending)

    held = [
        session("this-hub-made-it", "new-token"),
        session("after-a-restart", ""),  # the hub that made it is gone, and its token with it
        session("delivered", "a-token", undelivered=False),
        session("stopping", "b-token", pending="stop"),
    ]

    async def one_pass():
        loop = asyncio.create_task(hub_handover.keep_delivering(lambda: held, interval=0.01))
        deadline = time.monotonic() + 5
        while not (delivered and replaced):
            assert time.monotonic() < deadline, (delivered, replaced)
            await asyncio.sleep(0.01)
        loop.cancel()

    asyncio.run(one_pass())
    assert delivered[0] == ("this-hub-made-it", "new-token")
    assert set(replaced) == {"after-a-restart"}
    assert {name for name, _ in delivered} == {"this-hub-made-it"}


def test_a_sessions_end_removes_its_shares_and_codes_and_leaves_anothers_and_no_stale_object(a_hub_database):
    db = a_hub_database
    alice, bob, carol = orm.User(name="alice"), orm.User(name="bob"), orm.User(name="carol")
    ended, kept = orm.Spawner(user=alice, name=""), orm.Spawner(user=alice, name="other")
    db.add_all([alice, bob, carol, ended, kept])
    db.commit()
    db.add_all(
        [
            orm.Share(owner=alice, spawner=ended, user=bob, scopes=["access:servers!server=alice/"]),
            orm.Share(owner=alice, spawner=kept, user=carol, scopes=["access:servers!server=alice/other"]),
        ]
    )
    code, _ = orm.ShareCode.new(db, owner=alice, spawner=ended, scopes=["access:servers!server=alice/"])
    db.commit()
    assert bob.shared_with_me  # loaded into the session, as the hub's pages load them

    assert hub_tokens.end_shares(db, ended) == 2
    assert [s.spawner.name for s in db.query(orm.Share)] == ["other"]
    assert db.query(orm.ShareCode).count() == 0
    assert bob.shared_with_me == [] and carol.shared_with_me  # the session's own objects left with the rows

"""The sharing API: a user shares a running session of theirs with a colleague (hub side).

    GET    /hub/api/dsportal/shares     {"mine": [share], "with_me": [shared session], "sharing": the admin's rules}
    POST   /hub/api/dsportal/shares     {"server": "", "user": "bob" | "group": "ml", "hours": 4} -> share
    DELETE /hub/api/dsportal/shares?server=&user=bob | &group=ml                           -> {}
    GET    /hub/api/dsportal/session/token  {"user", "server"}: asked with a running session's current token only

The token check: a session takes the new token the hub hands it when a share
ends (handover.py) only once the hub answers for it here; a guest's copy of an
earlier one gets 403.

Granted here, not through JupyterHub's share API, because that one lets a user
share only with names they may read (`read:users:name`, which users do not
have) and has no expiry and no admin rules (spawner/hub/sharing/shares.py).  Only the
owner's browser or a token of theirs that may start and stop that server may
share it: a session's own token (which a guest's code could read) may not.
JupyterHub's own share and share-code APIs stay served, behind the admin's
switches (share codes only with `sharing.codes`).
"""

from __future__ import annotations

import json

from jupyterhub.apihandlers import APIHandler
from jupyterhub.apihandlers.shares import ServerShareAPIHandler, ServerShareCodeAPIHandler
from tornado import web

from portal.settings import SharingSettings

from ...contract import TOKEN_CHECK_PATH
from ..base.requestlimits import Bounded
from ..request.sessionlimits import label, user_sessions
from ..session.lookup import own_spawner
from ..session.token import running
from .handover import replace_in_session
from .shares import (
    WARNING,
    ShareRefused,
    apply_shares,
    check_rules,
    choice_model,
    chosen,
    iso,
    live,
    parse_share,
    utcnow,
    without,
)

SHARES_URL = "/api/dsportal/shares"
MAX_BODY = 4096


def shares_view(users, default) -> dict:
    """What the home page shows of sharing for the user of `default` (their unnamed session's spawner): their
    sessions' shares, the running sessions shared with them, and the admin's rules.  `users`: the hub's users."""
    user, now = default.user, utcnow()
    mine = [
        choice_model(c, session.name, now)
        for session in user_sessions(user)
        if session.ready
        for c in live(session.record.shares, now)
    ]
    with_me = []
    for share in list(user.orm_user.shared_with_me):  # JupyterHub's, groups' members included (sharing.py)
        if share.owner is None or share.owner.id == user.orm_user.id or (share.expires_at and share.expires_at <= now):
            continue
        owner = users[share.owner]
        spawner = owner.spawners[share.spawner.name]
        with_me.append(
            {
                "server": spawner.name,
                "expires": iso(share.expires_at) if share.expires_at else "",
                "owner": owner.name,
                "label": label(spawner.name),
                "running": bool(spawner.ready),
                "url": owner.server_url(spawner.name) if spawner.ready else "",
            }
        )
    rules = default.settings.sharing
    return {
        "mine": mine,
        "with_me": with_me,
        "sharing": {"enabled": rules.enabled, "groups": rules.groups, "max_hours": rules.max_hours, "warning": WARNING},
    }


class SharesHandler(Bounded, APIHandler):
    def _rules(self, spawner) -> SharingSettings:
        return spawner.settings.sharing

    def _session(self, default, server: str):
        session = next((s for s in user_sessions(default.user) if s.name == server), None)
        if session is None:
            raise web.HTTPError(404, f"You have no session called {server!r}.")
        # who may start and stop this session may share it: the owner's browser or a token of theirs; not a
        # session's own token, which a guest's code could read (it may only report activity and use the server)
        if not self.has_scope(f"servers!server={default.user.name}/{server}"):
            raise web.HTTPError(403, "Only the session's owner can share it (this token may not).")
        return session

    async def get(self):
        default = own_spawner(self, "Log in to see your shares.")
        self.finish(json.dumps(shares_view(self.users, default)))

    async def post(self):
        default = own_spawner(self, "Log in to share your sessions.")
        if len(self.request.body or b"") > MAX_BODY:
            raise web.HTTPError(400, "The request is too long.")
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            raise web.HTTPError(400, "The request is not JSON.") from None
        rules = self._rules(default)
        try:
            server, kind, name, hours = parse_share(body, rules)
            session = self._session(default, server)
            check_rules(rules, default.user.name, kind, name)
        except ShareRefused as e:
            raise web.HTTPError(e.status, str(e)) from None
        if not session.ready:
            raise web.HTTPError(409, f"Only a running session can be shared; {label(server)} is not running.")
        if kind == "user" and self.find_user(name) is None:
            raise web.HTTPError(
                400, f"There is no portal user called {name!r}: they must log in to the portal once first."
            )
        now = utcnow()
        session.record.shares = chosen(live(session.record.shares, now), kind, name, hours, now)
        session.save_state()
        await apply_shares(session, fresh_groups=True)
        choice = next(c for c in session.record.shares if (c["kind"], c["name"]) == (kind, name))
        self.log.info(
            "%s shared %s with %s %s until %s", default.user.name, label(server), kind, name, choice["expires"]
        )
        self.finish(json.dumps(choice_model(choice, server, now)))

    async def delete(self):
        default = own_spawner(self, "Log in to manage your shares.")
        server = self.get_argument("server", "")
        session = self._session(default, server)
        user, group = self.get_argument("user", ""), self.get_argument("group", "")
        if bool(user) == bool(group):
            raise web.HTTPError(400, "Say whom to stop sharing with: ?user=NAME or ?group=NAME.")
        kind, name = ("user", user) if user else ("group", group)
        session.record.shares = without(session.record.shares, kind, name)
        session.save_state()
        delivery = await apply_shares(session, fresh_groups=True)
        if delivery is not None:  # the session's token was replaced: answer once the session has the new one
            await delivery
        self.log.info("%s stopped sharing %s with %s %s", default.user.name, label(server), kind, name)
        self.finish("{}")


class PortalShareAPIHandler(Bounded, ServerShareAPIHandler):
    """JupyterHub's share API (admins', by name), with the admin's switch; a revoke through it replaces the
    session's token as the portal's own does (handover.py)."""

    async def post(self, user_name, server_name=None):
        if not self.portal_services.settings.sharing.enabled:
            raise web.HTTPError(403, "Sharing sessions is turned off on this portal.")
        return await super().post(user_name, server_name)

    async def patch(self, user_name, server_name=None):
        await super().patch(user_name, server_name)
        await self._replace_token(user_name, server_name)

    async def delete(self, user_name, server_name=None):
        await super().delete(user_name, server_name)
        await self._replace_token(user_name, server_name)

    async def _replace_token(self, user_name, server_name) -> None:
        # no await between JupyterHub's revoke and the replacement: the old token is dead before any other request
        user = self.find_user(user_name)
        if user is not None and server_name in user.orm_spawners:
            spawner = user.spawners[server_name]
            if hasattr(spawner, "record") and (delivery := replace_in_session(spawner)) is not None:
                await delivery


class PortalShareCodeAPIHandler(Bounded, ServerShareCodeAPIHandler):
    """JupyterHub's share codes, only where the admin allows them (sharing.codes)."""

    async def post(self, user_name, server_name=None):
        rules = self.portal_services.settings.sharing
        if not (rules.enabled and rules.codes):
            raise web.HTTPError(
                403, "Share codes are turned off on this portal: share with a named user or group from the home page."
            )
        return await super().post(user_name, server_name)


class TokenCheckHandler(Bounded, APIHandler):
    """Whose session's current token this is: a session takes a token the hub hands it (a share ended) only
    once this answers for it (spawner/jupyter/sharing/handover.py); a guest's copy of an earlier one gets 403."""

    # the session's lifeline, as its port and end reports are: never refused for a rate that code in the session
    # (a guest's, before the share ended) could use up with the same token (spawner/hub/base/requestlimits.py)
    rate_limited = False

    def get(self):
        token = self.get_auth_token() or ""
        user = self.current_user
        sessions = user_sessions(user) if user is not None and hasattr(user, "spawners") else []
        session = next((s for s in sessions if hasattr(s, "holds_token") and s.holds_token(token)), None)
        if session is None or not running(session):
            raise web.HTTPError(403, "This is not the token of a running session.")
        self.finish(json.dumps({"user": user.name, "server": session.name}))


HANDLERS = [
    (SHARES_URL, SharesHandler),
    ("/api" + TOKEN_CHECK_PATH, TokenCheckHandler),
]  # installed by spawner/hub/wiring/routes.py
REPLACED = {ServerShareAPIHandler: PortalShareAPIHandler, ServerShareCodeAPIHandler: PortalShareCodeAPIHandler}

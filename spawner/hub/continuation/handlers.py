"""The continue API: a running session of the user's continues in a new Slurm job (hub side).

    POST /hub/api/dsportal/continue/automatically   {"server": "", "on": true} -> 200: continue it automatically
                                      before its time limit (automatic.py), until "on": false
    POST /hub/api/dsportal/continue   {"server": "", "force"?: true} -> 202 {"server", "continued_from": JOB, "notebooks": {path:
                                      {"carried": N, "not": {name: why}, "refused"?}}, "words", "url"}

The caller is the session's owner: their cookie, or a token of theirs that may use their server, never a
session's own token (a guest of a shared session can read it, and a continuation charges the owner's account).
At most CONTINUES_PER_MINUTE per user.  The steps are service.py's.
"""

from __future__ import annotations

import json

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ..base.requestlimits import Bounded
from ..request.sessionlimits import user_sessions
from ..session.lookup import own_spawner
from ..session.token import refuse_session_token
from ..session.userrecord import save_user_record, user_record
from .service import ContinueRefused, continue_session

CONTINUE_URL = "/api/dsportal/continue"
AUTOMATIC_URL = "/api/dsportal/continue/automatically"
CONTINUES_PER_MINUTE = 3
MAX_BODY = 1024
SESSION_TOKEN_WORDS = (
    "A session's own token cannot continue a session (a guest of a shared session can read it); continue from "
    "the home page, or with an API token of yours from the Token page."
)


def server_named(body: object) -> tuple[str, bool]:
    """The request body -> (the session's name, whether to continue past a running cell); ValueError with what to
    send (pure)."""
    if not isinstance(body, dict) or set(body) - {"server", "force"}:
        raise ValueError(
            'Send {"server": NAME}: the name of the running session to continue ("" for the unnamed), and '
            '"force": true to continue past a cell still running.'
        )
    name, force = body.get("server", ""), body.get("force", False)
    if not isinstance(name, str) or len(name) > 255:
        raise ValueError('"server" must be the session\'s name, a string ("" for the unnamed).')
    if not isinstance(force, bool):
        raise ValueError('"force" must be true or false.')
    return name, force


class _OwnersRequest(Bounded, APIHandler):
    """A request about one session of the caller's own, with the right to start and stop that very server."""

    def owners_session(self, login_words: str, read, counted: tuple = ()):
        """(the caller's default portal spawner, what `read` makes of the body; its first item is the session's
        name): HTTP 403 for a session's token or a token without that server's `servers` scope (another of the
        user's servers', a carry's: access only), 400 for a body `read` refuses, 404 for a session they lack."""
        default = own_spawner(self, login_words)
        refuse_session_token(self, user_sessions(default.user), SESSION_TOKEN_WORDS)
        if counted:
            self.count_per_minute(*counted)
        try:
            if len(self.request.body or b"") > MAX_BODY:
                raise ValueError(f"The body is over {MAX_BODY} bytes.")
            asked = read(json.loads(self.request.body or b"{}"))
        except (ValueError, RecursionError) as e:
            raise web.HTTPError(400, str(e)) from None
        user, name = default.user, asked[0]
        if not self.has_scope(f"servers!server={user.name}/{name}"):
            raise web.HTTPError(403, SESSION_TOKEN_WORDS if not name else f"This token may not start {name!r}.")
        if name not in user.orm_user.orm_spawners or not hasattr(user.spawners[name], "record"):
            raise web.HTTPError(404, f"You have no session called {name!r}." if name else "You have no session.")
        return default, asked


class ContinueHandler(_OwnersRequest):
    async def post(self):
        words = f"Too many continuations in a minute (at most {CONTINUES_PER_MINUTE}); try again shortly."
        default, (name, force) = self.owners_session(
            "Log in to continue your session.", server_named, (("continuations",), CONTINUES_PER_MINUTE, words)
        )
        try:
            answer = await continue_session(self, default.user.spawners[name], force)
        except ContinueRefused as e:
            raise web.HTTPError(e.status, str(e)) from None
        self.set_status(202)
        self.finish(json.dumps(answer))


def automatic_choice(body: object) -> tuple[str, bool]:
    """The body of the automatic choice -> (the session's name, on); ValueError with what to send (pure)."""
    if not isinstance(body, dict) or set(body) != {"server", "on"}:
        raise ValueError('Send {"server": NAME, "on": true or false}.')
    if not isinstance(body["server"], str) or len(body["server"]) > 255 or not isinstance(body["on"], bool):
        raise ValueError('"server" is the session\'s name ("" for the unnamed), "on" true or false.')
    return body["server"], body["on"]


class AutomaticHandler(_OwnersRequest):
    """The user's choice to continue a session automatically before its end (automatic.py does it)."""

    async def post(self):
        default, (name, on) = self.owners_session("Log in to choose how your session continues.", automatic_choice)
        if not default.settings.sessions.continuation.enabled:
            raise web.HTTPError(403, "The admin has not enabled continuing sessions here.")
        chosen = user_record(default).auto_continue
        if on:
            chosen[name] = True
        else:
            chosen.pop(name, None)
        save_user_record(default)
        self.finish(json.dumps({"server": name, "on": on}))


HANDLERS = [
    (CONTINUE_URL, ContinueHandler),
    (AUTOMATIC_URL, AutomaticHandler),
]  # installed by spawner/hub/wiring/routes.py

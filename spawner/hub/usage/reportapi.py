"""Sessions report what they used so far (hub side).

    POST /hub/api/dsportal/session/usage   a tally (spawner/usage.py), with the session's own token -> 204

The session's server (spawner/jupyter/usagesampler.py) sends its whole tally
every `usage.report_seconds`; the hub keeps the last one in the session's
record, and the session's end turns it into the summary.  Only a session's
own token may report, for that session; a report that does not read is a 400
and changes nothing.  A user can forge their own session's report (the token
is theirs): it is their own summary they would spoil, and the accounting's
CPU and memory come from Slurm.
"""

from __future__ import annotations

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ...contract import USAGE_PATH
from ...usage import UsageTally
from ..homepage import own_spawner
from ..requestlimits import Bounded
from ..sessions import user_sessions


class UsageReportHandler(Bounded, APIHandler):
    def post(self):
        default = own_spawner(self, "Only a session's own server reports what it used.")
        token = self.get_auth_token() or ""
        session = next((s for s in user_sessions(default.user) if s.holds_token(token)), None)
        if session is None or not session.job_id:
            raise web.HTTPError(403, "Only a running session's own server reports what it used, with its token.")
        try:
            tally = UsageTally.from_dict(self.get_json_body())
        except ValueError as e:
            raise web.HTTPError(400, f"This usage report does not read: {e}.") from None
        if not session.record.stopping:  # a stop took the last tally for the summary: a late one is dropped
            session.record.usage = tally.to_dict()
        self.set_status(204)
        self.finish()


HANDLERS = [("/api" + USAGE_PATH, UsageReportHandler)]  # installed by spawner/hub/routes.py

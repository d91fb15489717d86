"""The receipts' REST API (hub side).

    GET /hub/api/dsportal/receipts/JOB_ID   the receipt of the user's session or run of that job (receipt.py),
                                            as a file to keep (Content-Disposition: attachment)

The caller is the user (their cookie, or a token of theirs that may use their server, but never a session's own
token, which a guest of a shared session can read); another user's job is no receipt of theirs (404, the same
words as a job they never had).  At most READS_PER_MINUTE per user: each
reads a file of theirs as them.
"""

from __future__ import annotations

import json

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ...slurmvocab import JOB_ID_IN_PATH
from ..base.requestlimits import Bounded
from ..request.sessionlimits import user_sessions
from ..session.lookup import own_spawner
from ..session.token import refuse_session_token
from . import service
from .receipt import ReceiptMissing

READS_PER_MINUTE = 30
SESSION_TOKEN_WORDS = (
    "A session's own token cannot read receipts (a guest of a shared session can read it); use the home page "
    "or an API token of yours from the Token page."
)
RECEIPTS_URL = "/api/dsportal/receipts"


class ReceiptHandler(Bounded, APIHandler):
    async def get(self, job_id: str):
        spawner = own_spawner(self, "Log in to see your receipts.")
        # a guest of a shared session can read its token: receipts (every session's, with their accounts) are not
        # theirs to read through it
        refuse_session_token(self, user_sessions(spawner.user), SESSION_TOKEN_WORDS)
        words = f"Too many receipts in a minute (at most {READS_PER_MINUTE}); try again shortly."
        self.count_per_minute(("receipt reads",), READS_PER_MINUTE, words)
        try:
            made = await service.receipt(self.portal_services, spawner, job_id)
        except ReceiptMissing as e:
            raise web.HTTPError(404, str(e)) from None
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.set_header("Content-Disposition", f'attachment; filename="dsportal-receipt-{job_id}.json"')
        self.finish(json.dumps(made, indent=1, sort_keys=False))


HANDLERS = [(RECEIPTS_URL + rf"/({JOB_ID_IN_PATH})", ReceiptHandler)]  # installed by spawner/hub/wiring/routes.py

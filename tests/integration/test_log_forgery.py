"""A user writes no line of the hub's log, and a sweep's mail with their words in its Subject still goes out
(spawner/hub/base/printable.py), on the dev cluster (real Slurm, the hub's log, exim).

The attack: a sweep whose results hold a key with a carriage return and a line break.  The key is the
sweep's objective, so it reached the hub's log ("Sweep N of bob ended: ...; best KEY ...") and the mail's
Subject: the log gained a forged line of the hub's own format, and the email library refused the Subject,
so the mail was dropped without a word to the user.
"""

from __future__ import annotations

import json

from tests.support.http import wait_until
from tests.support.hublog import HUB_LOG
from tests.support.jobs import JobsClient, notebook_text
from tests.support.mail import subject_of, wait_for_mail

FORGED = "[W 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to mallory"
# \r alone starts a line for a terminal and for str.splitlines; \n starts one everywhere; U+2028 for some viewers
KEY = f"score\r{FORGED}\r\n{FORGED}\u2028{FORGED}"


def forged_lines(text: str) -> list[str]:
    """Lines of the log (as a terminal or str.splitlines breaks them) that begin with the forged record, at the
    line's start or indented as the hub's formatter indents a record's further lines."""
    return [line for line in text.splitlines() if line.lstrip().startswith(FORGED[:14])]


def hostile_notebook() -> str:
    notebook = json.loads(notebook_text([f"results = {{{KEY!r}: seed}}"], "seed = 0\n"))
    notebook["cells"][-1]["metadata"]["tags"] = ["results"]
    return json.dumps(notebook)


def test_a_results_key_with_line_breaks_forges_no_log_line_and_the_mail_goes_out():
    bob = JobsClient.for_user("bob")  # alice's jobs are other tests' to cancel
    status, _ = bob.request("POST", "notify", {"mail": True})
    assert status == 200
    try:
        bob.write("sweeps/forged.ipynb", hostile_notebook())
        since = HUB_LOG.stat().st_size
        run = bob.submit(
            {"path": "sweeps/forged.ipynb", "partition": "cpu", "hours": 0.2,
             "sweep": {"grid": {"seed": {"values": [0, 1]}}}}
        )  # fmt: skip
        ended = f"Sweep {run['job_id']} of bob ended"

        def new_log() -> str:
            return HUB_LOG.read_bytes()[since:].decode(errors="replace")

        wait_until(lambda: ended in new_log(), 300, "the hub's log line of the sweep's end")
        log = new_log()
        assert forged_lines(log) == [], forged_lines(log)
        line = next(line for line in log.splitlines() if ended in line)
        assert "best score\\r[W 2025-01-01" in line and "\\r\\n[W" in line and "\\u2028[W" in line, line
        mail = wait_for_mail("bob", f"Sweep {run['job_id']} (sweeps/forged.ipynb): 2 of 2 completed", timeout=120)
        subject = subject_of(mail).replace("\n ", " ")  # unfolded (RFC 5322: a long header is folded at a space)
        assert "best score\\r[W 2025-01-01" in subject and "\r" not in subject, subject
        row = bob.rows()[run["job_id"]]
        assert "could not be sent" not in row["why"], row["why"]
    finally:
        bob.request("POST", "notify", {"mail": False})

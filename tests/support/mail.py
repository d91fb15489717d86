"""Mail the dev cluster's exim delivered: where a user's mail lands, and waiting for one message there.

exim (deploy/dev/mail.py) delivers USER@MAIL_DOMAIN to /var/mail/USER, an
mbox file; the tests read it as root with Python's `mailbox`, under the same
locks exim takes (a dot-lock file and fcntl), so a message being appended is
never read half-written.
"""

from __future__ import annotations

import email.message
import mailbox
from email.header import decode_header, make_header
from pathlib import Path

from deploy.dev.demo import MAIL_DOMAIN
from tests.support.http import wait_until

SPOOL = Path("/var/mail")


def address_of(user: str) -> str:
    """The address exim delivers to `user`'s mailbox (the directory's `mail` attribute for the demo users)."""
    return f"{user}@{MAIL_DOMAIN}"


def mailbox_of(user: str) -> Path:
    """Where mail for `user` is delivered: the mbox file /var/mail/USER."""
    return SPOOL / user


def subject_of(message: email.message.Message) -> str:
    """The Subject as text (an RFC 2047 encoded word decoded)."""
    return str(make_header(decode_header(message.get("Subject", ""))))


def find_mail(user: str, subject_contains: str) -> email.message.Message | None:
    """The first message in `user`'s mailbox whose Subject contains the text; None if none (yet)."""
    path = mailbox_of(user)
    if not path.exists():
        return None
    box = mailbox.mbox(path, create=False)
    try:
        box.lock()
    except mailbox.ExternalClashError:  # exim is appending right now: look again on the next poll
        box.close()
        return None
    try:
        return next((m for m in box if subject_contains in subject_of(m)), None)
    finally:
        box.unlock()
        box.close()


def wait_for_mail(user: str, subject_contains: str, timeout: float = 30) -> email.message.Message:
    """The message for `user` whose Subject contains the text, once delivered; an AssertionError after `timeout` s."""
    return wait_until(
        lambda: find_mail(user, subject_contains),
        timeout,
        f"a mail for {user} with {subject_contains!r} in its Subject in {mailbox_of(user)}",
        every=0.2,
    )

"""A word when something happens: a run ended, a queued session started, a session's time runs out (hub side).

JupyterLab (the jobs panel's poll) and the home page show a run's end from
the same rows (runs/board.py); this adds e-mail for users who opted in
(their record's `notify_mail`), to the address the directory holds (auth
state's "mail", ldap.mail_attribute), through the admin's relay
(notify.smtp_host).  The hub sends with the standard library's smtplib in a
worker thread, bounded by notify.timeout: a relay that hangs costs a
thread, never the hub's event loop.  Over STARTTLS the relay's certificate
and host name are checked against the system's CAs or notify.ca_file; a relay
that cannot prove its name gets no mail.  A mail that cannot be sent is logged
with the relay's words, and `tell` says why in words for the user: the
tracker adds them to the run's row (its notice in the jobs panel and on the
home page); nothing else waits for it.  A user's words in a header (a
notebook's path, a sweep's results key in the Subject) are `printable`
(base/printable.py): a line break there once made the email library refuse
the whole mail.

The tracker (one loop for the whole hub) notices runs that ended: it reads
the shared listing, and for each run that left the queue reads its log's
tail once (as the user) to say why it ended, remembers that in the user's
record and tells the user.
"""

from __future__ import annotations

import asyncio
import logging
import re
import smtplib
import ssl
from collections.abc import Iterable
from datetime import datetime
from email.message import EmailMessage

from portal.settings import NotifySettings

from .printable import printable

log = logging.getLogger("JupyterHub").getChild("notices")

_ADDRESS = re.compile(r"[^\s<>@,;\"]+@[A-Za-z0-9.-]+")


async def mail_address(user) -> str:
    """The user's e-mail address from the directory (auth state), "" when none or not a plain address."""
    state = await user.get_auth_state() or {}
    address = state.get("mail") if isinstance(state, dict) else ""
    return address if isinstance(address, str) and _ADDRESS.fullmatch(address) else ""


def message(notify: NotifySettings, to: str, subject: str, body: str) -> EmailMessage:
    """The mail (pure): plain text, from the portal's sender."""
    mail = EmailMessage()
    mail["From"] = notify.sender
    mail["To"] = to
    mail["Subject"] = printable(subject)[:200]
    mail.set_content(body)
    return mail


def tls_context(notify: NotifySettings) -> ssl.SSLContext:
    """What STARTTLS trusts: the system's CAs, or the site's (notify.ca_file); the relay's name is checked."""
    return ssl.create_default_context(cafile=notify.ca_file or None)


def _send(notify: NotifySettings, mail: EmailMessage) -> None:
    with smtplib.SMTP(notify.smtp_host, notify.smtp_port, timeout=notify.timeout) as relay:
        if notify.starttls:
            relay.starttls(context=tls_context(notify))  # checks against smtp_host, the name connected to
        relay.send_message(mail)


def why_not_sent(notify: NotifySettings, error: BaseException) -> str:
    """The reason in the log, with what the admin can do about an untrusted relay (pure)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        where = f"the CA in {notify.ca_file}" if notify.ca_file else "the system's CAs"
        return (
            f"its certificate does not prove it is {notify.smtp_host} ({error.verify_message}; checked against "
            f"{where}); name the site's CA in notify.ca_file, or the relay's name as its certificate has it in "
            "notify.smtp_host"
        )
    return str(error) or "no answer"


def unsent_words(notify: NotifySettings, error: BaseException) -> str:
    """Why a mail was not sent, in words for its reader (pure); the relay's own words go to the admin's log."""
    if isinstance(error, TimeoutError):
        return f"the portal's mail relay did not answer within {notify.timeout * 3:g} s"
    if isinstance(error, ssl.SSLError):
        return "the portal's mail relay could not prove its name"
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        return "the portal's mail relay refused your address"
    if isinstance(error, smtplib.SMTPException):
        return "the portal's mail relay refused it"
    if isinstance(error, OSError):
        return "the portal's mail relay could not be reached"
    return "the mail could not be written"


async def _deliver(notify: NotifySettings, to: str, subject: str, body: str) -> str:
    """Send one mail through the relay: "" when sent, else why not (for the user; the log has the relay's words)."""
    try:
        mail = message(notify, to, subject, body)  # ValueError: a header the email library will not write
        await asyncio.wait_for(asyncio.to_thread(_send, notify, mail), notify.timeout * 3)
    except (OSError, smtplib.SMTPException, TimeoutError, ValueError) as e:
        log.warning(
            "Mail to %s (%s) not sent: the relay %s: %s", to, subject, notify.smtp_host, why_not_sent(notify, e)
        )
        return unsent_words(notify, e)
    log.info("Mail to %s sent: %s", to, subject)
    return ""


async def send(notify: NotifySettings, to: str, subject: str, body: str) -> bool:
    """Send one mail through the relay; False (logged) when there is no relay or it refused or hung."""
    if not notify.smtp_host or not to:
        return False
    return not await _deliver(notify, to, subject, body)


async def tell(notify: NotifySettings, user, opted_in: bool, subject: str, body: str) -> str:
    """Mail the user when they opted in and the portal has a relay: "" when sent or not wanted, else why it was
    not sent, in words for the user (their address missing from the directory, the relay refused or hung)."""
    if not opted_in or not notify.smtp_host:
        return ""
    to = await mail_address(user)
    if not to:
        log.warning("Mail to %s (%s) not sent: the directory holds no address for them", user.name, subject)
        return "the directory holds no e-mail address for you"
    return await _deliver(notify, to, subject, body)


def unsent_notice(what: str, why: str) -> str:
    """The words a run's row gains when its mail was not sent (pure): `what` is "job 12" or "sweep 12"."""
    return f"The mail about {what} could not be sent: {why}; this row is its notice."


def run_ended_mail(job_id: str, path: str, why: str, output: str, public_url: str) -> tuple[str, str]:
    """(subject, body) of the mail that says a run ended (pure)."""
    status = why.split(":")[0].split(";")[0].rstrip(".")
    subject = f"Job {job_id} ({path}): {status}"
    lines = [f"Your job {job_id} ({path}) has ended.", "", why, ""]
    if output:
        lines.append(f"Output notebook: ~/{output}")
    lines.append(f"Jobs panel and log: {public_url}")
    return subject, "\n".join(lines) + "\n"


def sweep_ended_mail(
    job_id: str, path: str, tally: dict[str, int], words: str, folder: str, public_url: str
) -> tuple[str, str]:
    """(subject, body) of the one mail for a whole sweep (pure): how many of its tasks completed, its best."""
    total = sum(tally.values())
    best = words.split("; best ", 1)[1].split(" (task")[0] if "; best " in words else ""
    subject = f"Sweep {job_id} ({path}): {tally.get('completed', 0)} of {total} completed" + (
        f"; best {best}" if best else ""
    )
    lines = [f"Your sweep {job_id} ({path}) has ended.", "", words, "", f"Output notebooks and results: ~/{folder}/"]
    lines.append(f"Its table in JupyterLab's jobs panel: {public_url}")
    return subject, "\n".join(lines) + "\n"


def session_started_mail(job_id: str, node: str, waited: str, url: str) -> tuple[str, str]:
    subject = f"Your session has started on {node}"
    body = f"Your queued session (job {job_id}) started on {node} after waiting {waited}.\n\nOpen it: {url}\n"
    return subject, body


def waited_words(seconds: float) -> str:
    """'40 s', '3 min', '2 h 5 min' (pure)."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if hours and rest else f"{hours} h" if hours else f"{minutes} min"


def minutes_left_mail(job_id: str, minutes: int, end: str, url: str) -> tuple[str, str]:
    subject = f"Your session ends in {minutes} minutes"
    body = (
        f"Your session (job {job_id}) reaches its time limit at {end.replace('T', ' ')[:16]}.\n"
        "Save your work; JupyterLab also saves open notebooks just before the end.\n\n"
        f"Open it: {url}\n"
    )
    return subject, body


def open_runs(runs: Iterable[dict]) -> list[dict]:
    """The runs whose end the tracker has not seen yet."""
    return [r for r in runs if not r.get("ended")]


def public_home(settings) -> str:
    """The portal's home page as users reach it (for mail)."""
    return (settings.hub.subdomain_host or settings.hub.bind_url).rstrip("/") + "/hub/home"


def now_text() -> str:
    return datetime.now().isoformat(timespec="minutes")

"""A user's words in the hub's log and mail headers: control characters written as escapes, never obeyed
(spawner/hub/base/printable.py), and a mail that cannot be sent said in words (spawner/hub/base/notices.py)."""

from __future__ import annotations

import asyncio
import io
import logging
import smtplib
from types import SimpleNamespace

import pytest
from tornado.log import LogFormatter

from portal.settings import NotifySettings
from spawner.hub.base import notices
from spawner.hub.base.printable import PrintableLines, printable, printable_log

FORGED = "score\r\n[I 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to mallory"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain words, a path/to/nb.ipynb", "plain words, a path/to/nb.ipynb"),
        ("a\r\nb\tc", "a\\r\\nb\\tc"),
        ("bell\x07 esc\x1b[31m del\x7f c1\x85", "bell\\x07 esc\\x1b[31m del\\x7f c1\\x85"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        (
            "bidi \u202eexe.txt \u2066iso\u2069 zw\u200b bom\ufeff",
            "bidi \\u202eexe.txt \\u2066iso\\u2069 zw\\u200b bom\\ufeff",
        ),
        ("tag \U000e0041", "tag \\U000e0041"),
        ("été, 東京, naïve, emoji 🙂, nbsp\u00a0", "été, 東京, naïve, emoji 🙂, nbsp\u00a0"),
        ("C:\\Users\\a \\n stays", "C:\\Users\\a \\n stays"),
        ("", ""),
    ],
)
def test_printable_writes_every_hidden_character_as_its_escape(text, expected):
    assert printable(text) == expected


def hub_logger(name: str) -> tuple[logging.Logger, io.StringIO]:
    """A logger with the hub's formatter (tornado's) on one handler, writing to a string."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(LogFormatter(color=False))
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, out


def test_a_forged_line_in_a_logged_value_stays_in_its_own_line():
    logger, out = hub_logger("test-printable-lines")
    printable_log(logger)
    printable_log(logger)  # idempotent: the hub calls it twice
    assert logger.handlers[0].filters.count(logger.handlers[0].filters[0]) == 1
    child = logger.getChild("runs")  # the portal's loggers are the hub's children: the handler's filter sees them
    child.info("Sweep %s of %s ended: best %s 1", "12", "alice", FORGED)
    lines = out.getvalue().splitlines()  # splitlines: \r, \u2028 ... break lines too
    assert len(lines) == 1, lines
    assert lines[0].endswith(
        "best score\\r\\n[I 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to mallory 1"
    )


def test_a_traceback_keeps_its_lines_and_its_message_cannot_start_one():
    logger, out = hub_logger("test-printable-traceback")
    printable_log(logger)
    try:
        raise ValueError(f"no key {FORGED}\u2028[E fake]")
    except ValueError:
        logger.exception("Reading %s failed", "x\ry")
    text = out.getvalue()
    assert "Reading x\\ry failed" in text and "Traceback (most recent call last):" in text
    assert not [line for line in text.splitlines() if line.startswith("[") and "Reading" not in line], text
    assert "no key score\\r" in text and "\\u2028[E fake]" in text


def test_a_record_whose_arguments_do_not_fit_is_left_to_the_handler():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d items", ("many",), None)
    assert PrintableLines().filter(record) and record.msg == "%d items"


NOTIFY = NotifySettings(smtp_host="127.0.0.1", smtp_port=1, timeout=1)


def test_a_subject_with_a_line_break_is_one_printable_header():
    mail = notices.message(NOTIFY, "alice@dsportal.test", f"Sweep 7 (a.ipynb): best {FORGED}", "body\n")
    assert mail["Subject"].startswith("Sweep 7 (a.ipynb): best score\\r\\n[I 2025-01-01")
    assert b"\r\n[I 2025" not in mail.as_bytes()


@pytest.mark.parametrize(
    "error, words",
    [
        (TimeoutError(), "the portal's mail relay did not answer within 3 s"),
        (ConnectionRefusedError(111, "Connection refused"), "the portal's mail relay could not be reached"),
        (smtplib.SMTPRecipientsRefused({"a@b": (550, b"no")}), "the portal's mail relay refused your address"),
        (smtplib.SMTPDataError(554, b"spam"), "the portal's mail relay refused it"),
        (ValueError("Header values may not contain linefeed"), "the mail could not be written"),
    ],
)
def test_why_a_mail_was_not_sent_in_words_for_the_user(error, words):
    assert notices.unsent_words(NOTIFY, error) == words


def a_user(mail: str) -> SimpleNamespace:
    async def auth_state():
        return {"mail": mail}

    return SimpleNamespace(name="alice", get_auth_state=auth_state)


def test_tell_says_why_a_mail_that_was_wanted_was_not_sent():
    nobody_listens = NotifySettings(smtp_host="127.0.0.1", smtp_port=9, timeout=1)  # discard port: refused
    assert asyncio.run(notices.tell(nobody_listens, a_user("alice@dsportal.test"), True, "s", "b\n")) == (
        "the portal's mail relay could not be reached"
    )
    assert asyncio.run(notices.tell(nobody_listens, a_user(""), True, "s", "b\n")) == (
        "the directory holds no e-mail address for you"
    )
    assert asyncio.run(notices.tell(nobody_listens, a_user("alice@dsportal.test"), False, "s", "b\n")) == ""
    assert asyncio.run(notices.tell(NotifySettings(), a_user("alice@dsportal.test"), True, "s", "b\n")) == ""


def test_the_notice_of_an_unsent_mail():
    assert notices.unsent_notice("sweep 12", "the portal's mail relay could not be reached") == (
        "The mail about sweep 12 could not be sent: the portal's mail relay could not be reached; "
        "this row is its notice."
    )


def test_a_sweeps_mail_that_was_not_sent_is_said_in_its_row(monkeypatch):
    from spawner.hub.runs import tracker as runs_tracker
    from spawner.hub.runs.tracker import Tracker

    run = {"job_id": "12", "sweep": {"tasks": 2}, "why": "2 tasks: 2 completed; best score 1 (task 1)."}
    saved = []
    spawner = SimpleNamespace(user=a_user("alice@dsportal.test"))
    monkeypatch.setattr(runs_tracker, "save_user_record", lambda s: saved.append(s is spawner))  # the user's record
    services = SimpleNamespace(settings=SimpleNamespace(notify=NotifySettings(smtp_host="127.0.0.1", smtp_port=9)))

    async def mail_once() -> None:
        tracker = Tracker(services, lambda: [], lambda: "https://portal/hub/home")
        tracker._mail(spawner, True, "Sweep 12 (a.ipynb): 2 of 2 completed", "body\n", run)
        await asyncio.gather(*tracker._mails)

    asyncio.run(mail_once())
    assert run["why"] == (
        "2 tasks: 2 completed; best score 1 (task 1). The mail about sweep 12 could not be sent: the portal's mail "
        "relay could not be reached; this row is its notice."
    )
    assert saved == [True]


def test_a_line_break_in_an_exceptions_words_starts_no_line_of_the_log():
    """The second hostile review: the traceback's lines were escaped one by one, so a user's line break in an
    exception's message still began a line of its own (indented, a forged record)."""
    import logging
    import sys

    from spawner.hub.base.printable import PrintableLines, traceback_text

    forged = "x\n[W 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to mallory"
    try:
        raise ValueError(forged)
    except ValueError:
        text = traceback_text(sys.exc_info())
        record = logging.LogRecord("JupyterHub", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    assert text.startswith("Traceback (most recent call last):\n  File ")
    assert (
        text.splitlines()[-1]
        == "ValueError: x\\n[W 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to mallory"
    )
    PrintableLines().filter(record)
    assert not any(line.lstrip().startswith("[W 2025") for line in logging.Formatter().format(record).splitlines())

"""Text a user wrote, made safe for a log line or a mail header: control characters shown, never obeyed (hub side).

A user's words reach the hub's log and mail in many places (a sweep's
results keys, a notebook's path, an app's or a share's name): a `\\r\\n` in
them once wrote a forged line into the hub's log ("... JupyterHub auth:1]
... admin token handed to ...") and made Python's email library refuse the
mail's Subject.  `printable` is the one place they are neutralised:

- every control character (C0, DEL, C1: `\\r`, `\\n`, `\\t`, ESC ...), the line
  and paragraph separators (U+2028, U+2029, which `str.splitlines` and some
  viewers break lines at) and the invisible format characters (the bidi
  overrides U+202A-U+202E and isolates U+2066-U+2069 that reorder what a
  reader sees, zero-width spaces, BOM) are written as Python writes them in a
  string literal: `\\n`, `\\x1b`, `\\u202e`.  A visible escape, not U+FFFD:
  the admin reading the log sees what was sent (an attack shows as one), and
  the line stays ASCII where the text was.
- nothing else changes: a backslash stays one (a path from Windows reads as
  written), so a user can write the six characters `\\r\\n` themselves; they
  read the same as an escaped line break, and break nothing.

`PrintableLines` applies it to every record of the hub's log, once the
message is formatted: one record is one line whatever its arguments hold
(a traceback keeps its own lines, each neutralised; the hub's formatter
indents them).  Pages need none of this: the hub's templates escape HTML
(Jinja's autoescape) and a line break in a page's text is only white space.
"""

from __future__ import annotations

import logging
import re
import traceback
import unicodedata

# Categories whose characters are escaped: controls, format characters (bidi, zero-width), line and paragraph
# separators.  Private-use and unassigned characters are left: they neither break a line nor reorder one.
HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NOT_PLAIN_ASCII = re.compile(r"[^\x20-\x7e]")  # only these are looked up: ASCII text costs one regex scan


def _escaped(match: re.Match) -> str:
    char = match.group()
    if unicodedata.category(char) not in HIDDEN:
        return char
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """`text` with every control, format and line-separator character written as its escape (pure)."""
    return _NOT_PLAIN_ASCII.sub(_escaped, text)


TRACEBACK_PARTS = ("  ", "Traceback (most recent call last):", "\nThe above exception", "\nDuring handling")


def traceback_text(exc_info) -> str:
    """A traceback as the standard library writes it, but each exception's own words on one line: a line break
    in a message (which may be a user's words) is written as an escape, and starts no line of the log (pure)."""
    parts = []
    for part in traceback.format_exception(*exc_info):
        if part.startswith(TRACEBACK_PARTS):  # the header, a frame (the code's own), the chain's words
            parts.append(part)
        else:  # "ValueError: <the message>": whatever the message holds, one line
            parts.append(printable(part.removesuffix("\n")) + "\n")
    return "".join(parts).removesuffix("\n")


class PrintableLines(logging.Filter):
    """On a log handler: each record's message is `printable`, its traceback's lines too."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the message: the handler reports them as it always did
            return True
        safe = printable(message)
        if safe != message:
            record.msg, record.args = safe, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = traceback_text(record.exc_info)
        if record.exc_text:
            record.exc_text = "\n".join(printable(line) for line in record.exc_text.split("\n"))
        return True


_FILTER = PrintableLines()


def printable_log(*loggers: logging.Logger) -> None:
    """Every handler of `loggers` (and of the root logger, where the other libraries' records go) writes printable
    lines; idempotent, so it is called again once the hub has added its own handlers."""
    for logger in (*loggers, logging.getLogger()):
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)

"""Text put into the generated Markdown pages as it is written: no accidental markup."""

from __future__ import annotations


def prose(text: str) -> str:
    """Text for Markdown as written: characters that would start markup (<, *, [ ...) escaped, `code` kept."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # outside backtick spans
        parts[i] = "".join("\\" + c if c in "\\<>*[]{}|" else c for c in parts[i])
    return "`".join(parts)


def code(text: str) -> str:
    """Inline code that holds any backticks the value has."""
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"

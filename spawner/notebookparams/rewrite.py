"""A parameters cell with new values written in place of its defaults ("Make this the notebook's defaults").

Only each value's text changes: the name, the assignment operator, an
annotation, the comment after it and every other line stay as they were.
"""

from __future__ import annotations

from .notebook import assignments


def _offset(lines: list[str], place: tuple[int, int]) -> int:
    line, column = place
    return sum(len(text) + 1 for text in lines[:line]) + column


def rewrite(source: str, rendered: dict[str, str], language: str, path: str) -> str:
    """`source` with the value of each name in `rendered` replaced by its text there (already written in the
    notebook's language); a ValueError for a name the cell does not assign, NotRunnable for a cell not read."""
    found = {a.parameter.name: a for a in assignments(source, path, language)}
    for name in rendered:
        if name not in found:
            assigned = ", ".join(found) or "nothing"
            raise ValueError(
                f"parameters: the parameters cell of {path} does not assign {name!r}; it assigns {assigned}."
            )
    lines = source.split("\n")
    # from the last value to the first, so that each place before it stays where it was
    for name in sorted(rendered, key=lambda n: found[n].start, reverse=True):
        start, end = _offset(lines, found[name].start), _offset(lines, found[name].end)
        source = source[:start] + rendered[name] + source[end:]
    return source

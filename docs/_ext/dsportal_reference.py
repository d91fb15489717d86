"""A Sphinx extension: the reference pages' generated parts, made from the code at every build.

A reference page holds its hand-written introduction and a marker line,
``<!-- generated: NAME -->``, which is replaced by NAME's Markdown as Sphinx
reads the page (the source-read event): nothing generated is written to the
tree or kept in git.  Those pages are read again at every build, since the
code they come from is not a file Sphinx watches.
"""

from __future__ import annotations

from collections.abc import Callable

from cli_reference import cli_markdown
from metrics_reference import metrics_markdown
from settings_reference import settings_markdown

GENERATED: dict[str, Callable[[], str]] = {
    "settings": settings_markdown,
    "metrics": metrics_markdown,
    "cli": cli_markdown,
}
MARKER = "<!-- generated: {} -->"


def fill(source: str) -> tuple[str, list[str]]:
    """`source` with each marker replaced by its generated Markdown, and the names of unknown markers (pure)."""
    for name, make in GENERATED.items():
        marker = MARKER.format(name)
        if marker in source:
            source = source.replace(marker, make())
    unknown = [line for line in source.splitlines() if line.startswith("<!-- generated:")]
    return source, unknown


def _on_source_read(app, docname: str, source: list[str]) -> None:
    source[0], unknown = fill(source[0])
    if unknown:
        from sphinx.util import logging

        logging.getLogger(__name__).warning("unknown generated part: %s", ", ".join(unknown), location=docname)


def _always_reread(app, env, added, changed, removed) -> list[str]:
    """The pages with a marker, read again at every build: their source is the code."""
    return [name for name in env.found_docs if _has_marker(env.doc2path(name))]


def _has_marker(path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return "<!-- generated:" in f.read()
    except OSError:
        return False


def setup(app) -> dict:
    app.connect("source-read", _on_source_read)
    app.connect("env-get-outdated", _always_reread)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

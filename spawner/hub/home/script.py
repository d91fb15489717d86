"""The home page's script: its files beside the page's template and the version the page asks for them with (hub side).

templates/static/home.js draws the page (the DOM side) and imports
templates/static/homerules.js (what the page shows and when it asks the hub
again: pure functions, tested by tests/js/home.test.mjs).  The hub serves the
two files (spawner/hub/home/handlers.py); the page (templates/home.html) loads
home.js with `?v=` the files' content hash, and home.js asks for
homerules.js with the same: tornado's static handler lets a browser keep a
versioned file for years, so a release that changes either file changes the
URL of both, and an unchanged one comes from the browser's cache.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from ...contract import data_dir

FILES = ("home.js", "homerules.js")
STATIC_URL = "dsportal/static/"  # under the hub's base URL, beside the usage pages' plotly.min.js


def folder() -> Path:
    """Where the files are: templates/static (spawner/_data/templates/static in a wheel)."""
    return data_dir("templates") / "static"


@functools.cache
def version() -> str:
    """The files' content hash (the hub reads them once: a new release restarts it)."""
    digest = hashlib.sha256()
    for name in FILES:
        digest.update((folder() / name).read_bytes())
    return digest.hexdigest()[:16]


def script_path() -> str:
    """The page script's URL under the hub's base URL, with its version."""
    return f"{STATIC_URL}home.js?v={version()}"

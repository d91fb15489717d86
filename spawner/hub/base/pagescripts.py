"""The pages' scripts: their files beside the templates and the version the pages ask for them with (hub side).

Each page's script is a module in two files: the DOM side, and its rules (what the page shows and what it asks
the hub: pure functions, tested with node's test runner in tests/js/).  templates/static/home.js draws the home
page (templates/home.html) with homerules.js; form.js runs the session form (templates/options_form.html) with
formrules.js; theme.js, on every page (templates/page.html), turns high contrast on and off; admin.js names what
JupyterHub's admin page (templates/admin.html) leaves unnamed.  The hub serves
the files (spawner/hub/home/handlers.py); a page loads its script with `?v=` the files' content hash, and the
script asks for its rules with the same: tornado's static handler lets a browser keep a versioned file for
years, so a release that changes a file changes every URL, and an unchanged one comes from the browser's cache.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from ...contract import data_dir

FILES = ("home.js", "homerules.js", "form.js", "formrules.js", "theme.js", "admin.js")
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


def script_path(name: str = "home.js") -> str:
    """A page script's URL under the hub's base URL, with its version."""
    return f"{STATIC_URL}{name}?v={version()}"

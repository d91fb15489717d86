"""A Dash app's file as a WSGI application (its Flask server), for gunicorn on a Unix socket.

`app.run()` binds TCP only.  The file is run as `__main__` would not be (its `if __name__ == "__main__":
app.run()` stays unrun) and its Dash object's Flask server, Dash's documented deployment target, is served.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path


class NoDashApp(RuntimeError):
    pass


def find_dash(namespace: dict):
    """The Dash object a file's top level made (`app = Dash(__name__)` by convention)."""
    import dash

    found = [value for value in namespace.values() if isinstance(value, dash.Dash)]
    if not found:
        raise NoDashApp("the file makes no Dash app at its top level (app = Dash(__name__))")
    return found[0]


def make():
    path = Path(os.environ["DSPORTAL_APP_FILE"])
    # gunicorn started in the session's private folder (its --chdir: nothing there shadows what it imports);
    # the app runs in its own, with its own modules beside it, as `python app.py` would
    os.chdir(path.parent)
    sys.path.insert(0, str(path.parent))
    return find_dash(runpy.run_path(str(path), run_name="dsportal_app")).server

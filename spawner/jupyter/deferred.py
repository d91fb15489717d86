"""What the session's server would pay for at start and use late or never: put off, or left out.

1. `rfc3987_syntax`, imported on first use.

jsonschema's format checker imports `rfc3987_syntax` whenever it is installed
(jupyter-events asks for `jsonschema[format-nongpl]`), and importing it builds
an Earley parser of RFC 3987's grammar: 0.9 s of a 2.4 s Jupyter server start
on the dev nodes, spent on the "iri" and "iri-reference" formats that no
Jupyter event schema uses.  A lazy loader (importlib.util.LazyLoader) cannot
help: jsonschema's `from rfc3987_syntax import is_valid_syntax` touches the
module at once.  So the stand-in offers that one name and imports the real
module on its first call; any other name imports it at once (PEP 562).

2. JupyterLab's yarn probe, left out of `jupyterlab.labapp`'s import.  The
module reads the application's version at import time through an AppOptions
whose npm registry default runs `node yarn.js config --json` wherever Node.js
is on PATH: 0.3 s of every start on a node with Node.js.  The registry is
used to build or install extensions (`jupyter lab build`, which computes its
own options), never by the version read at import; so that one import runs
with the probe answering "no yarn configuration", and it is put back after.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import types
from contextlib import contextmanager

MODULE = "rfc3987_syntax"


@functools.cache
def _real() -> types.ModuleType:
    if isinstance(sys.modules.get(MODULE), _StandIn):
        del sys.modules[MODULE]
    return importlib.import_module(MODULE)


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):  # the import system asks for __path__ and the like: no reason to load
            raise AttributeError(name)
        return getattr(_real(), name)


def is_valid_syntax(term: str, value: str) -> bool:
    return _real().is_valid_syntax(term, value)


def defer_rfc3987_syntax() -> bool:
    """Put the stand-in in place of `rfc3987_syntax` unless it is imported already or not installed; True if put."""
    if MODULE in sys.modules or importlib.util.find_spec(MODULE) is None:
        return False
    stand_in = _StandIn(MODULE, __doc__)
    stand_in.is_valid_syntax = is_valid_syntax
    sys.modules[MODULE] = stand_in
    return True


NO_YARN_CONFIG = {"yarn config": {}, "npm config": {}}  # what jupyterlab's probe answers without Node.js


@contextmanager
def _no_yarn_probe():
    import jupyterlab.commands as commands

    probe = getattr(commands, "_yarn_config", None)
    if probe is None:  # a JupyterLab without the probe: nothing to leave out
        yield
        return
    commands._yarn_config = lambda logger: NO_YARN_CONFIG
    try:
        yield
    finally:
        commands._yarn_config = probe


def import_labapp_without_yarn_probe() -> bool:
    """Import `jupyterlab.labapp` with the probe left out, unless imported already; True if it was imported here."""
    if "jupyterlab.labapp" in sys.modules or importlib.util.find_spec("jupyterlab") is None:
        return False
    with _no_yarn_probe():
        importlib.import_module("jupyterlab.labapp")
    return True

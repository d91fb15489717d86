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
with the probe answering "no yarn configuration", and it is put back after
(upstream_jupyterlab.py: the one private name of JupyterLab it replaces).

3. The cyclic garbage collector, held while the server starts.  Its imports
and extensions make some 270,000 objects that live as long as the server, and
the collector walks them again and again while they pile up: 0.2 s of the 0.9 s
of imports on the dev nodes.  Collection is off from the session's start
(`hold_collection`) until the server listens (`resume_collection`), where
`gc.freeze()` sets everything made so far aside for good: later collections
never walk it again, and the port keeper's pages stay shared with the server it
forked.  What the start left as cyclic garbage stays with it (some 2,700
objects, nothing RSS shows), and so does what was alive then and becomes
garbage later: bounded by what the start made.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import threading
import types

from .upstream_jupyterlab import no_yarn_probe

MODULE = "rfc3987_syntax"


_loading = threading.Lock()
_loaded: list[types.ModuleType] = []


def _real() -> types.ModuleType:
    with _loading:  # one import, whichever thread asks first
        if not _loaded:
            if isinstance(sys.modules.get(MODULE), _StandIn):
                del sys.modules[MODULE]
            _loaded.append(importlib.import_module(MODULE))
        return _loaded[0]


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):  # the import system asks for __path__ and the like: no reason to load
            raise AttributeError(name)
        return getattr(_real(), name)


def is_valid_syntax(term: str, value: str) -> bool:
    return _real().is_valid_syntax(term, value)


def defer_rfc3987_syntax() -> bool:
    """Put the stand-in in place of `rfc3987_syntax` unless it is imported already or cannot be imported
    (it needs lark: without it jsonschema must go without the two formats, as it would); True if put."""
    spec = importlib.util.find_spec(MODULE) if MODULE not in sys.modules else None
    if spec is None or importlib.util.find_spec("lark") is None:
        return False
    stand_in = _StandIn(MODULE, __doc__)
    # what the import system and importers read: its submodules stay importable, find_spec still works
    stand_in.__spec__, stand_in.__file__ = spec, spec.origin
    stand_in.__path__ = list(spec.submodule_search_locations or [])
    stand_in.is_valid_syntax = is_valid_syntax
    sys.modules[MODULE] = stand_in
    return True


def import_labapp_without_yarn_probe() -> bool:
    """Import `jupyterlab.labapp` with the probe left out, unless imported already; True if it was imported here."""
    if "jupyterlab.labapp" in sys.modules or importlib.util.find_spec("jupyterlab") is None:
        return False
    with no_yarn_probe():
        importlib.import_module("jupyterlab.labapp")
    return True


def hold_collection() -> None:
    """No cyclic garbage collection until `resume_collection` (the server listens)."""
    gc.disable()


def resume_collection() -> None:
    """Everything made so far set aside for good (never collected, never walked again), then collection again."""
    gc.freeze()
    gc.enable()

"""Imports the session's server would pay for at start and use late or never, put off until first use.

jsonschema's format checker imports `rfc3987_syntax` whenever it is installed
(jupyter-events asks for `jsonschema[format-nongpl]`), and importing it builds
an Earley parser of RFC 3987's grammar: 0.9 s of a 2.4 s Jupyter server start
on the dev nodes, spent on the "iri" and "iri-reference" formats that no
Jupyter event schema uses.  A lazy loader (importlib.util.LazyLoader) cannot
help: jsonschema's `from rfc3987_syntax import is_valid_syntax` touches the
module at once.  So the stand-in offers that one name and imports the real
module on its first call; any other name imports it at once (PEP 562).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import types

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

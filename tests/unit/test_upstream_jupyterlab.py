"""The private name of JupyterLab the session replaces (spawner/jupyter/session/upstream_jupyterlab.py) is there
and is what `labapp`'s import asks; tests/unit/test_deferred.py shows the import then runs no `node`."""

from __future__ import annotations

import inspect

import jupyterlab.commands as commands

from spawner.jupyter.session.upstream_jupyterlab import NO_YARN_CONFIG, no_yarn_probe


def test_the_yarn_probe_is_there_and_is_put_back():
    probe = commands._yarn_config
    assert list(inspect.signature(probe).parameters) == ["logger"]
    assert "_yarn_config(" in inspect.getsource(commands.AppOptions)  # the registry's default asks it
    with no_yarn_probe():
        assert commands._yarn_config(None) == NO_YARN_CONFIG
    assert commands._yarn_config is probe

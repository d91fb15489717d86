"""Where the session's server goes past JupyterLab's public API: each place, why, what it relies on.

Runs in the session's Jupyter server (in the Slurm job, as the user).  Checked against jupyterlab 4.6.6
(pyproject.toml pins jupyterlab>=4.2,<5 for this module); tests/unit/test_upstream_jupyterlab.py fails when the
name below is gone or answers otherwise.

- `jupyterlab.commands._yarn_config`, replaced while `jupyterlab.labapp` is imported (deferred.py says why): the
  import reads the application's version through an AppOptions whose npm registry default runs `node yarn.js
  config --json` wherever Node.js is on PATH; the registry is used only to build or install extensions.
"""

from __future__ import annotations

from contextlib import contextmanager

NO_YARN_CONFIG = {"yarn config": {}, "npm config": {}}  # what jupyterlab's probe answers without Node.js


@contextmanager
def no_yarn_probe():
    """JupyterLab's yarn probe answers "no configuration" inside the block, and is put back after."""
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

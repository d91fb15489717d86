"""Where the session's TensorBoard goes past TensorBoard's public API: each place, why, what it relies on.

Runs in the session's Jupyter server (in the Slurm job, as the user).  Checked against tensorboard 2.21.0
(pyproject.toml pins tensorboard>=2.16,<3 for this module); tests/unit/test_upstream_tensorboard.py fails when a
name below is gone, and tests/unit/test_tensorboard.py serves a real folder and waits for the reload thread's end.

- `TensorBoard._make_data_provider`, the step of `TensorBoard.main` that reads the folder: TensorBoard offers its
  WSGI application only with its own server, which listens on TCP, and the session serves the application inside
  its Jupyter server instead (instances.py says why).
- `TensorBoard._ingester._reload_interval`, which the reload thread reads after each pass: at 0 ("load once") the
  thread ends; it has no other stop.
"""

from __future__ import annotations

from typing import Any


def data_provider(tb: Any) -> tuple[Any, Any]:
    """(provider, multiplexer) for a configured `program.TensorBoard`, as `TensorBoard.main` makes them."""
    return tb._make_data_provider()


def stop_reloading(tb: Any) -> None:
    """The reload thread of `tb` ends after its next pass."""
    tb._ingester._reload_interval = 0

"""The private names of TensorBoard the session uses (spawner/jupyter/tensorboard/upstream_tensorboard.py) are
there in the installed TensorBoard; tests/unit/test_tensorboard.py shows they still do what the module says."""

from __future__ import annotations

import inspect

from tensorboard import program
from tensorboard.backend.event_processing import data_ingester


def test_tensorboards_data_provider_step_and_reload_interval_are_there():
    assert list(inspect.signature(program.TensorBoard._make_data_provider).parameters) == ["self"]
    # the local ingester (load_fast false) keeps its interval and its reload loop ends at 0
    source = inspect.getsource(data_ingester.LocalDataIngester)
    assert "self._reload_interval = flags.reload_interval" in source
    assert "if self._reload_interval == 0:" in source

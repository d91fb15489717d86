"""The dev cluster's own logic that needs no machine: which processes are its orphans."""

from __future__ import annotations

import pytest

from deploy.dev.supervisor import launched_as

PROXY = ["configurable-http-proxy", "--ip", "127.0.0.1", "--port", "8000"]


@pytest.mark.parametrize("cmdline, ours", [
    (PROXY, True),
    (["node", "/usr/local/bin/configurable-http-proxy", "--ip", "127.0.0.1", "--port", "8000"], True),  # via its shebang
    (["node", "/usr/local/bin/configurable-http-proxy", "--ip", "0.0.0.0", "--port", "8000"], False),  # other options
    (["node", "/srv/other-proxy", "--ip", "127.0.0.1", "--port", "8000"], False),
    (["configurable-http-proxy"], False),
    ([], False),
])
def test_a_process_is_ours_only_with_our_exact_command_line(cmdline, ours):
    assert launched_as(PROXY, cmdline) is ours


def test_a_hub_started_through_its_interpreter_is_recognised():
    hub = ["/opt/dsportal/venv/bin/jupyterhub", "-f", "/etc/dsportal/jupyterhub_config.py"]
    assert launched_as(hub, ["/opt/dsportal/venv/bin/python3", *hub])
    assert not launched_as(hub, ["/opt/dsportal/venv/bin/python3", *hub[:2], "/tmp/other.py"])

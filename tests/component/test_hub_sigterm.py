"""A hub asked to stop (SIGTERM) stops taking work and exits within seconds (real hub, mock Slurm).

JupyterHub's stop cancels every task and waits for all of them, its HTTP server still accepting requests.  A
Slurm command whose subprocess was starting at that moment never finished (CPython 3.11 waits for an exit that is
never reported), so the hub went on serving, starting sessions and runs, until supervisord killed it 30 s later
(seen in the soak).  Here every subprocess start of the hub takes 2 s (as on a loaded head node, the window
widened), and SIGTERM comes while alice's sbatch is starting.
"""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.error

import pytest

from tests.support.http import wait_until
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data

LOOPS = (
    "reconciler",
    "session tokens",
    "new tokens",
    "shares",
    "continuations",
    "runs tracker",
    "cluster metrics",
    "accounting",
    "gc policy",
    "proxy routes",
)
PROMPT = 15.0  # seconds from SIGTERM to the hub's exit, at most (on a loaded 2-core machine; 2-4 s measured)

# Every subprocess the hub starts connects its pipes 2 s late and says so in a file: the test can send its
# signal while a command is starting.
SLOW_STARTS = """
import asyncio as _asyncio, asyncio.base_subprocess as _subprocess, pathlib as _pathlib
_connect_pipes = _subprocess.BaseSubprocessTransport._connect_pipes


async def _late(self, waiter):
    _pathlib.Path({mark!r}).write_text(str(self._proc.pid))
    await _asyncio.sleep(2)
    return await _connect_pipes(self, waiter)


_subprocess.BaseSubprocessTransport._connect_pipes = _late
"""


@pytest.fixture
def a_hub_with_slow_starts(tmp_path):
    mock = MockSlurm(tmp_path / "mockslurm")
    mark = tmp_path / "starting"
    hub = HubProcess(tmp_path, config_data(mock), after=SLOW_STARTS.format(mark=str(mark)))
    hub.start()
    yield hub, mock, mark
    hub.stop()


def submitted_by(mock: MockSlurm) -> list[str]:
    return [call["env"].get("USER", "") for call in mock.calls("sbatch")]


def test_a_hub_asked_to_stop_takes_no_more_work_and_exits_within_seconds(a_hub_with_slow_starts):
    hub, mock, mark = a_hub_with_slow_starts
    mark.unlink(missing_ok=True)  # what the hub's start ran
    assert hub.api("POST", "/users/alice/server", {"gpus": 1, "hours": 1})[0] in (201, 202)
    wait_until(mark.exists, what="alice's sbatch starting")
    asked = time.monotonic()
    hub.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "...done" in hub.log.read_text(), what="JupyterHub's cleanup done")

    # what a user's script asks once JupyterHub's cleanup is done, on the hub's own port (the proxy is gone)
    try:
        answer = hub.request("POST", f"{hub.hub_api}/users/bob/server", {"gpus": 0, "hours": 1})[0]
    except (urllib.error.URLError, OSError) as e:
        answer = type(e).__name__
    try:
        hub.proc.wait(PROMPT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the hub still runs {PROMPT:g} s after SIGTERM (it answered bob's start: {answer})")
    print(f"the hub exited {time.monotonic() - asked:.1f} s after SIGTERM")
    assert answer not in (201, 202)
    assert "bob" not in submitted_by(mock)  # bob's start never reached Slurm
    log = hub.log.read_text()
    for loop in LOOPS:  # started once the hub ran, each named (spawner/hub/wiring/lifecycle.py)
        assert log.count(f"Started the {loop} loop") == 1, loop
    assert f"Stopped the portal's {len(LOOPS)} background loops" in log  # cancelled at the stop, before JupyterHub's
    assert log.index(f"Stopped the portal's {len(LOOPS)} background loops") < log.index("...done")

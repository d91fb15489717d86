"""A Slurm command that ends as its caller is cancelled leaves the caller cancelled (spawner/hub/slurm/client.py).

CPython 3.11's asyncio.wait_for returns the inner answer when the cancellation arrives in the moment the inner
awaitable completes.  The hub ran its commands through it, so a start stopped in its first second (JupyterHub's
DELETE cancels it) as its sbatch answered went on starting as if never stopped, and the DELETE answered 500
("pending spawn") a second later (seen in this suite's own runs).
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from spawner.hub.slurm import client as slurm
from tests.component.test_spawner import until


class EndingNow:
    """A command's process whose answer the test gives; its pid is a stand-in the cancel may signal."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode = 0
        self.asked = False
        self.answer = asyncio.get_running_loop().create_future()

    async def communicate(self, input=None):
        self.asked = True
        return await self.answer

    async def wait(self) -> int:
        return 0


async def test_a_command_that_ends_as_its_caller_is_cancelled_leaves_the_caller_cancelled(monkeypatch):
    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)  # what the cancelled command's end signals
    try:
        proc = EndingNow(stand_in.pid)

        async def started(*argv, **kw):
            return proc

        monkeypatch.setattr(asyncio, "create_subprocess_exec", started)
        caller = asyncio.ensure_future(slurm.run(["sbatch", "--parsable"], timeout=10))
        await until(lambda: proc.asked)
        proc.answer.set_result((b"100\n", b""))  # the command ends ...
        caller.cancel()  # ... in the moment its caller is cancelled
        with pytest.raises(asyncio.CancelledError):
            print("the caller went on with", await caller)
    finally:
        stand_in.kill()
        stand_in.wait()

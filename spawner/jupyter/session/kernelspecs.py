"""The session's kernel list is the session's: the server's first kernelspec answers wait for the session's kernels.

The session's start writes its kernelspecs in the background while the server
starts (spawner/job/session/start.py: probing the node takes most of a second),
into a folder first on JUPYTER_PATH that appears whole when they are all
written.  On a cold node JupyterLab's page could ask for the kernel list
before that: it got the environment's stock "Python 3 (ipykernel)" and "R",
without the session's module and container kernels, and their logos answered
404 once the session's folder of the same names took their place.

So this kernelspec manager, which the session's server is given
(spawner/job/kernels/isolation.py's server_args), waits, bounded, for that
folder before it lists kernels (`/api/kernelspecs`) or serves a kernel's
files (`/kernelspecs/NAME/logo-64x64.png`).  Past the bound it answers with
what there is and logs why; the page's next look at the list (JupyterLab
polls it) finds the rest.  Both places are jupyter_server's own hooks for a
kernelspec manager that answers later (its gateway's manager uses them): the
list handler awaits `get_all_specs` when it returns an awaitable, and the
resource handler asks an async `get_kernel_spec_resource` first
(tests/unit/test_session_kernelspecs.py fails when either changes).
`get_kernel_spec` stays synchronous: jupyter_client's kernel manager calls it
so when it starts a kernel, which only a listed kernel can be.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import time
from pathlib import Path

from traitlets import Float, Unicode, default

from ...job.kernels.userkernels import PrivateKernelSpecManager
from ...job.session.start import SESSION_KERNELS_VAR

POLL_SECONDS = 0.05
# the files jupyter_server's kernel list offers of a kernel (its kernelspec_model): nothing in a subfolder
RESOURCE_NAME = re.compile(r"kernel\.js|kernel\.css|logo-[^/\\]+")


RESOURCE_MAX_BYTES = 1 << 20  # a logo or a kernel.js; a larger one is left to jupyter_server, which streams it


def resource_file(resource_dir: str, path: str) -> Path | None:
    """The file of `resource_dir` that the kernel list offers as `path`, or None: a name it does not offer."""
    return Path(resource_dir, path) if RESOURCE_NAME.fullmatch(path) else None


def read_resource(resource_dir: str, path: str) -> bytes | None:
    """The bytes of a kernel's file, or None (jupyter_server then decides, with its own checks): a name the list
    does not offer, a link out of the kernel's folder (the hostile review: a logo linked to ~/.secret or
    /proc/self/environ was served, where jupyter_server's own handler answers 403), not a regular file, or over
    RESOURCE_MAX_BYTES."""
    found = resource_file(resource_dir, path)
    if found is None:
        return None
    real, folder = os.path.realpath(found), os.path.realpath(resource_dir)
    if not real.startswith(folder + os.sep):
        return None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > RESOURCE_MAX_BYTES:
            return None
        return os.read(fd, RESOURCE_MAX_BYTES)
    finally:
        os.close(fd)


class SessionKernelSpecManager(PrivateKernelSpecManager):
    session_kernels = Unicode(
        help="""The session's kernelspecs folder: the kernel list waits until it exists (it appears whole).
        Default: the session start's DSPORTAL_SESSION_KERNELS; empty (no session kernels): no wait.
        c.SessionKernelSpecManager.session_kernels = "/tmp/dsportal-alice-77-x1y2/kernels"
        """,
    ).tag(config=True)
    session_kernels_wait = Float(
        5.0,
        help="""Seconds the first kernel list waits for the session's kernelspecs, at most (default 5).
        c.SessionKernelSpecManager.session_kernels_wait = 5.0
        """,
    ).tag(config=True)

    _written: asyncio.Task | None = None

    @default("session_kernels")
    def _session_kernels_default(self) -> str:
        return os.environ.get(SESSION_KERNELS_VAR, "")

    async def get_all_specs(self) -> dict:
        await self.session_kernels_written()
        return super().get_all_specs()

    async def get_kernel_spec_resource(self, kernel_name: str, path: str) -> bytes | None:
        """A kernel's logo or script, once the session's kernels are written; None (jupyter_server then looks on
        disk itself, and answers 404 where there is nothing) for a name the kernel list does not offer."""
        await self.session_kernels_written()
        try:
            resource_dir = self.get_kernel_spec(kernel_name).resource_dir
        except KeyError:
            return None
        return await asyncio.to_thread(read_resource, resource_dir, path)

    async def session_kernels_written(self) -> None:
        """Return once the session's kernelspecs are written, or the wait's bound has passed (one wait for all
        the requests that come during it; none after it)."""
        if self._written is None:
            self._written = asyncio.ensure_future(self._wait_for_session_kernels())
        await asyncio.shield(self._written)

    async def _wait_for_session_kernels(self) -> None:
        if not self.session_kernels:
            return
        folder = Path(self.session_kernels)
        if folder.is_dir():
            return
        started = time.monotonic()
        while not folder.is_dir():
            if time.monotonic() - started >= self.session_kernels_wait:
                self.log.warning(
                    "dsportal: the session's kernels were not written within %g s; the kernel list offers the "
                    "environment's until they are (the session's log, ~/.dsportal-session-%s.log, says why)",
                    self.session_kernels_wait,
                    os.environ.get("SLURM_JOB_ID", "JOB"),
                )
                return
            await asyncio.sleep(POLL_SECONDS)
        self.log.info("dsportal: the kernel list waited %.2f s for the session's kernels", time.monotonic() - started)

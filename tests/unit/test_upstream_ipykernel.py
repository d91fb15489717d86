"""What the session's Python kernel relies on past ipykernel's public API: each test fails when ipykernel changes
it.  The place is described, with why, in spawner/job/kernels/upstream_ipykernel.py; tests/component/
test_kernel_sockets.py starts a kernel with it and sees a forked child's output come through the pipe."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from ipykernel import iostream

from spawner.job.kernels.pythonkernel import standalone_code, with_private_pipe
from spawner.job.kernels.upstream_ipykernel import private_pipe

THREAD = iostream.IOPubThread


def test_ipykernel_makes_its_pipe_through_these_two_methods():
    assert "self._setup_pipe_in()" in inspect.getsource(THREAD.__init__)
    assert "self._setup_pipe_out()" in inspect.getsource(iostream)
    assert list(inspect.signature(THREAD._setup_pipe_in).parameters) == ["self"]
    assert list(inspect.signature(THREAD._setup_pipe_out).parameters) == ["self"]


def test_what_ipykernel_reads_of_the_pipe_is_what_the_replacements_set():
    receive = inspect.getsource(THREAD._handle_pipe_msg)
    assert "msg[0] != self._pipe_uuid" in receive  # the 16 bytes _setup_pipe_in makes
    send = inspect.getsource(iostream)
    assert "ctx, pipe_out = self._setup_pipe_out()" in send  # a context and a socket, as returned
    assert "pipe_out.send_multipart([self._pipe_uuid, *msg]" in send
    assert "self._pipe_in.on_recv(self._handle_pipe_msg)" in inspect.getsource(THREAD._setup_pipe_in)


def test_an_ipykernel_without_them_is_left_as_it_is():
    assert private_pipe(SimpleNamespace(IOPubThread=type("IOPubThread", (), {})), "/tmp") is False


def test_the_standalone_launcher_holds_no_kernelspec_placeholder_and_drops_the_kernels_folder_first():
    """jupyter_client replaces each {name} of a kernel's argv (connection_file, cwd, ...): the program has none.
    Its first lines take the kernel's folder off sys.path before anything is imported from it."""
    code = standalone_code()
    assert not re.search(r"\{[A-Za-z0-9_]+\}", code)
    assert code.startswith("import os\nimport sys\nif sys.path and")
    compile(code, "-c", "exec")


def test_the_launcher_takes_over_ipykernel_launcher_and_ipykernel_and_nothing_else():
    assert with_private_pipe(["py", "-m", "ipykernel_launcher", "-f", "{connection_file}"])[1:3] == [
        "-c",
        standalone_code(),
    ]
    assert with_private_pipe(["py", "-m", "ipykernel", "-f", "x"])[1:3] == ["-c", standalone_code()]
    assert with_private_pipe(["julia", "-i", "kernel.jl"]) == ["julia", "-i", "kernel.jl"]


@pytest.mark.parametrize("module", ["json", "zmq", "__future__", "os", "sys", "ipykernel"])
def test_a_module_in_the_kernels_folder_does_not_shadow_the_launchers_imports(tmp_path, module):
    """A json.py (or __future__.py: `from __future__ import` is a real import) left in a shared project folder ran
    as the user at kernel start.  The launcher, run in that folder without a connection file, must fail on its
    own (no -f) without running the planted file."""
    (tmp_path / f"{module}.py").write_text("open('PLANTED', 'w').write('ran')\n")
    subprocess.run(
        [sys.executable, "-c", standalone_code(), "--version"], cwd=tmp_path, capture_output=True, timeout=60
    )
    assert not (tmp_path / "PLANTED").exists()

"""What the session's Python kernel relies on past ipykernel's public API: each test fails when ipykernel changes
it.  The place is described, with why, in spawner/job/kernels/upstream_ipykernel.py; tests/component/
test_kernel_sockets.py starts a kernel with it and sees a forked child's output come through the pipe."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from ipykernel import iostream

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

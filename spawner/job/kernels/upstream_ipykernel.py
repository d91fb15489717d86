"""Where the session's Python kernel goes past ipykernel's public API: each place, why, what it relies on.

Runs in the session's Python 3 kernel (on the node, as the user), before
ipykernel starts (spawner/job/kernels/pythonkernel.py).  Checked against
ipykernel 6.29.0 and 7.4.0 (pyproject.toml pins ipykernel>=6.29,<8 for this
module); tests/unit/test_upstream_ipykernel.py fails when ipykernel changes
what it relies on.

- `IOPubThread._setup_pipe_in` and `IOPubThread._setup_pipe_out`, replaced
  (`private_pipe`): with `transport=ipc` ipykernel still opens one TCP socket
  on 127.0.0.1, the pipe that carries the output of forked subprocesses
  (multiprocessing), and it has no setting for it.  Messages without the
  kernel's 16 random bytes are dropped, but only after they are read whole
  and printed whole to the session log: any account on the node could send
  one of a gigabyte and make the kernel swell and the user's log fill.  The
  replacements bind a Unix socket in the kernel's own private runtime folder
  instead and refuse messages over PIPE_MAX_BYTES.  They keep what the rest of
  IOPubThread reads of them: `_pipe_uuid` (the 16 bytes, checked by
  `_handle_pipe_msg`), `_pipe_in` (the stream that hands messages to
  `_handle_pipe_msg`) and `_setup_pipe_out`'s answer, a new zmq context and
  a PUSH socket connected to the pipe.  Where ipykernel no longer has those
  methods, it is left as it is (the kernel still works; the README says so).
"""

from __future__ import annotations

import os

PIPE_MAX_BYTES = 16 * 1024 * 1024  # one subprocess output message: far above any print, far below harm


def private_pipe(iostream, folder: str) -> bool:
    """Make ipykernel's subprocess-output pipe (`iostream` is ipykernel.iostream) a Unix socket in `folder`.
    Whether it could."""
    import zmq
    from zmq.eventloop.zmqstream import ZMQStream

    thread = iostream.IOPubThread
    if not (hasattr(thread, "_setup_pipe_in") and hasattr(thread, "_setup_pipe_out")):
        return False

    def _setup_pipe_in(self):
        self._pipe_uuid = os.urandom(16)
        self._pipe_path = os.path.join(folder, f"pipe-{os.getpid()}-{self._pipe_uuid.hex()[:8]}")
        pipe_in = self.socket.context.socket(zmq.PULL)
        pipe_in.linger = 0
        pipe_in.setsockopt(zmq.MAXMSGSIZE, PIPE_MAX_BYTES)
        pipe_in.bind(f"ipc://{self._pipe_path}")
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def _setup_pipe_out(self):
        context = zmq.Context()  # a new one after the fork, as ipykernel's own
        pipe_out = context.socket(zmq.PUSH)
        pipe_out.linger = 3000
        pipe_out.connect(f"ipc://{self._pipe_path}")
        return context, pipe_out

    thread._setup_pipe_in = _setup_pipe_in
    thread._setup_pipe_out = _setup_pipe_out
    return True

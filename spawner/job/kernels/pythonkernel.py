"""The session's Python 3 kernel: ipykernel, with no TCP listener at all (on the node, as the user).

With `transport=ipc` (spawner/job/kernels/isolation.py) ipykernel still opens one TCP
socket on 127.0.0.1: the pipe that carries the output of forked subprocesses
(multiprocessing) to the kernel.  Messages without the kernel's 16 random
bytes are dropped, but only after they are read whole and printed whole to
the session log: any account on the node could send one of a gigabyte and
make the kernel swell and the user's log fill.  ipykernel has no setting for
it, so this launcher replaces the two methods that make the pipe: it binds
a Unix socket in the kernel's own private runtime folder instead, and
refuses messages over PIPE_MAX_BYTES.  Where ipykernel no longer has those
methods, it is left as it is (the kernel still works; the README says so).
"""

from __future__ import annotations

import os
import sys

PIPE_MAX_BYTES = 16 * 1024 * 1024  # one subprocess output message: far above any print, far below harm


def connection_folder(argv: list[str]) -> str | None:
    """The folder of the connection file named by `-f FILE` or `-f=FILE` (the session's runtime folder)."""
    for i, arg in enumerate(argv):
        if arg == "-f" and i + 1 < len(argv):
            return os.path.dirname(os.path.abspath(argv[i + 1]))
        if arg.startswith(("-f=", "--f=")):
            return os.path.dirname(os.path.abspath(arg.split("=", 1)[1]))
    return None


def private_pipe(iostream, folder: str) -> bool:
    """Make ipykernel's subprocess-output pipe a Unix socket in `folder`.  -> whether it could."""
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


def main() -> None:
    folder = connection_folder(sys.argv[1:])
    if folder:
        from ipykernel import iostream

        private_pipe(iostream, folder)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()

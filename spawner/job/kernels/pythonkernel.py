"""The session's Python 3 kernel: ipykernel, with no TCP listener at all (on the node, as the user).

With `transport=ipc` (spawner/job/kernels/isolation.py) ipykernel still opens one TCP
socket on 127.0.0.1: the pipe that carries the output of forked subprocesses
(multiprocessing), which any account on the node can send to.  ipykernel has no
setting for it, so this launcher puts that pipe on a Unix socket in the
kernel's own private runtime folder, with a message limit, before ipykernel
starts (spawner/job/kernels/upstream_ipykernel.py says how and why).
"""

from __future__ import annotations

import os
import sys

from .upstream_ipykernel import private_pipe


def connection_folder(argv: list[str]) -> str | None:
    """The folder of the connection file named by `-f FILE` or `-f=FILE` (the session's runtime folder)."""
    for i, arg in enumerate(argv):
        if arg == "-f" and i + 1 < len(argv):
            return os.path.dirname(os.path.abspath(argv[i + 1]))
        if arg.startswith(("-f=", "--f=")):
            return os.path.dirname(os.path.abspath(arg.split("=", 1)[1]))
    return None


def main() -> None:
    folder = connection_folder(sys.argv[1:])
    if folder:
        from ipykernel import iostream

        private_pipe(iostream, folder)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()

"""The session's Python kernels: ipykernel, with no TCP listener at all (on the node, as the user).

With `transport=ipc` (spawner/job/kernels/isolation.py) ipykernel still opens one TCP
socket on 127.0.0.1: the pipe that carries the output of forked subprocesses
(multiprocessing), which any account on the node can send to.  ipykernel has no
setting for it, so this launcher puts that pipe on a Unix socket in the
kernel's own private runtime folder, with a message limit, before ipykernel
starts (spawner/job/kernels/upstream_ipykernel.py says how and why).  The
session's own Python runs it as a module; a Python that has ipykernel but not
this package (a container image's, a module's) runs the same code as one
`python -c` program (`standalone_code`).
"""

from __future__ import annotations

import inspect
import os
import sys

from . import upstream_ipykernel
from .upstream_ipykernel import private_pipe

# first: `python -c` puts the kernel's folder (the notebook's, which others may write to on shared storage) first
# on sys.path; ipykernel_launcher removes it before importing anything, and so does this program (ipykernel puts
# it back for the user's own code once it runs).  Nothing is imported before that but sys (built in) and os
# (loaded at every start); not even __future__, whose `from __future__ import` is a real import: the body is
# compiled with its flag instead.
_PROLOGUE = """import os
import sys
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
import __future__
"""
FUTURE = "from __future__ import annotations\n"
# after upstream_ipykernel's source and connection_folder's, in a Python without this package
_LAUNCH = """
import sys
from ipykernel import iostream
folder = connection_folder(sys.argv[1:])
if folder and not private_pipe(iostream, folder):
    print(KEPT_TCP, file=sys.stderr, flush=True)
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""


KEPT_TCP = (
    "dsportal: this ipykernel is a version whose subprocess pipe the portal cannot move off TCP 127.0.0.1; "
    "other accounts on the node could send text into this kernel's output. Use the portal's ipykernel (remove "
    "yours from your packages: pip uninstall ipykernel)."
)


def connection_folder(argv: list[str]) -> str | None:
    """The folder of the connection file named by `-f FILE` or `-f=FILE` (the session's runtime folder)."""
    for i, arg in enumerate(argv):
        if arg == "-f" and i + 1 < len(argv):
            return os.path.dirname(os.path.abspath(argv[i + 1]))
        if arg.startswith(("-f=", "--f=")):
            return os.path.dirname(os.path.abspath(arg.split("=", 1)[1]))
    return None


def standalone_code() -> str:
    """This launcher as the text of one `python -c` program, for any Python with ipykernel and pyzmq."""
    upstream = inspect.getsource(upstream_ipykernel).replace(FUTURE, "")
    body = "\n".join([upstream, f"KEPT_TCP = {KEPT_TCP!r}", inspect.getsource(connection_folder), _LAUNCH])
    flags = "__future__.annotations.compiler_flag"
    return f"{_PROLOGUE}exec(compile({body!r}, '<dsportal-launcher>', 'exec', {flags}, dont_inherit=True))\n"


def with_private_pipe(command: list[str]) -> list[str]:
    """A kernel command that runs `PYTHON -m ipykernel_launcher ...` or `PYTHON -m ipykernel ...`, run through this
    launcher instead (`PYTHON -c CODE ...`); any other command as it is."""
    for i in range(len(command) - 1):
        if command[i] == "-m" and command[i + 1] in ("ipykernel_launcher", "ipykernel"):
            return [*command[:i], "-c", standalone_code(), *command[i + 2 :]]
    return list(command)


def main() -> None:
    folder = connection_folder(sys.argv[1:])
    if folder:
        from ipykernel import iostream

        if not private_pipe(iostream, folder):
            print(KEPT_TCP, file=sys.stderr, flush=True)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()

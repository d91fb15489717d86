"""Run a command that ends when the hub does: `python -m spawner.hub.base.childguard COMMAND...` (hub side).

JupyterHub starts its managed services (the idle cullers) as child
processes and stops them at a clean shutdown; a hub that crashes or is
killed leaves them running, and the restarted hub starts a second set beside
them.  systemd's control group ends them with the hub, but not every site
runs the hub under systemd.  Linux's parent-death signal does, for any
supervisor: it is set here, then the command is exec'd (the setting
survives exec).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m spawner.hub.base.childguard COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        print(f"childguard: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    if os.getppid() != parent:  # the hub died before the signal was armed
        return 0
    os.execvp(argv[0], argv)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Container images hold no setuid or setgid programs, no device nodes and no folder others may write (standard library only).

Charliecloud and Apptainer run an image without privileges, but a directory
image lies on storage every user can read, and without `nosuid` there its
setuid-root programs (`su`, `mount`, `passwd` ...) run as root straight from
the file system, outside any container.  Its device nodes (`/dev/null`, made
`crw-rw-rw-` by debootstrap) would open the host's devices the same way.  No
kernel needs either: `dsportal images pull` and the dev cluster's image build
remove them, and `dsportal doctor` fails an image that still has them.
Its world-writable folders (`/tmp`, `/var/tmp`, `/run/lock`: 1777 as the
distribution made them) would let any user put files into an image that
every user's kernels run from; the image is read-only in the container, so
they are closed (0755) the same way.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID


def _entries(root: Path):
    for folder, dirs, files in os.walk(root):  # never follows symlinks into the host
        for name in dirs + files:
            path = os.path.join(folder, name)
            yield path, os.lstat(path)


def privileged_entries(root: Path, limit: int = 20) -> list[str]:
    """Up to `limit` setuid/setgid files and device nodes under the directory image `root`, as 'path (why)'."""
    found = []
    for path, st in _entries(root):
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            found.append(f"{path} (device node)")
        elif stat.S_ISREG(st.st_mode) and st.st_mode & PRIVILEGE_BITS:
            found.append(f"{path} (set{'uid' if st.st_mode & stat.S_ISUID else 'gid'} {stat.filemode(st.st_mode)})")
        elif stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH:
            found.append(f"{path} (a folder every user may write, {stat.filemode(st.st_mode)})")
        if len(found) >= limit:
            break
    return found


def make_unprivileged(root: Path) -> list[str]:
    """Clear setuid/setgid bits and remove device nodes under `root`; return what was changed."""
    changed = []
    for path, st in list(_entries(root)):
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            os.unlink(path)
            changed.append(f"removed device node {path}")
        elif stat.S_ISREG(st.st_mode) and st.st_mode & PRIVILEGE_BITS:
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~PRIVILEGE_BITS)
            changed.append(f"cleared set-id bits of {path}")
        elif stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH:
            os.chmod(path, 0o755)
            changed.append(f"closed the folder {path} every user could write")
    return changed

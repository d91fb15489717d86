"""Whether a path is this user's alone (job side, as the user): what the job may trust in a folder of files.

A file another account may write could hold what this user's code then runs: a pickle loaded into a kernel
(continuation/carry.py), a repository's config whose commands git runs (receipts/environment.py).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

NO_ONE_ELSE = 0o077  # neither read nor written by others
NO_ONE_ELSE_WRITES = 0o022  # others may read


def mine_alone(path: Path, others: int = NO_ONE_ELSE) -> bool:
    """Whether `path` is this user's, not a link, and its mode gives others none of the `others` bits."""
    try:
        found = path.lstat()
    except OSError:
        return False
    return not stat.S_ISLNK(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & others

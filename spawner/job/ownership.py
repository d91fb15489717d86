"""Whether a path is this user's alone (job side, as the user): what the job may trust in a folder of files.

A file another account may write could hold what this user's code then runs: a pickle loaded into a kernel
(continuation/carry.py), a repository's config whose commands git runs (receipts/environment.py).  A JSON file
the job keeps for a later job of the user's is written for this user alone, and read only where it still is.
"""

from __future__ import annotations

import json
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


def write_private_json(path: Path, value: object) -> None:
    """`value` as JSON in `path`, this user's alone (0600 from its creation; never through a link)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w") as out:
        json.dump(value, out)
    os.chmod(path, 0o600)  # a file that was there keeps its mode through O_CREAT


def read_private_json(folder: Path, name: str) -> object:
    """The JSON of `folder`/`name` when the folder and the file are this user's alone; None otherwise, or when it
    is not JSON (what `write_private_json` wrote, unless someone else could have written it since)."""
    path = folder / name
    if not folder.is_dir() or not mine_alone(folder) or not path.is_file() or not mine_alone(path):
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return None

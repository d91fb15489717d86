"""Where the portal's data files are, installed or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("templates" or "notebooks").

    A wheel carries them as ``portal/_data/<name>``; a source checkout has them
    at the top of the repository.
    """
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"DS Portal data folder {name!r} is missing from the installation")

"""A user's file read from stdin, its parameters printed: the hub's parse, out of the hub's process.

    python -I -m spawner.notebookparams PATH MAX_BYTES KIND  < the file's bytes

The hub pipes `sudo -u USER head -c MAX_BYTES+1 -- FILE` straight into this
process (spawner/hub/slurm/fileparse.py), so the file's bytes never enter the
hub: json.loads of a 20 MiB notebook holds an interpreter's lock for most of a
second and leaves hundreds of MiB the allocator keeps, here in a process that
exits.  It prints one small JSON object, {"parameters": [...]} or
{"refused": "what the user reads"}; PATH is only for those words.  KIND
"notebook" reads the parameters cell, any other kind only checks the size.
"""

from __future__ import annotations

import json
import resource
import sys

from .model import NotRunnable
from .notebook import notebook_parameters

MEMORY_PER_BYTE = 40  # address space allowed per byte of the file: json.loads of cells of short lines takes ~15
MEMORY_FLOOR = 512 * 1024 * 1024  # bytes: the interpreter itself, whatever the file


def answer(data: bytes, path: str, max_bytes: int, kind: str) -> dict:
    """The file's bytes -> what the hub is told (pure)."""
    if len(data) > max_bytes:
        return {
            "refused": f"{path} is larger than {max_bytes // (1024 * 1024)} MiB; clear its outputs and save it again."
        }
    if kind != "notebook":
        return {"parameters": []}
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return {
            "refused": f"{path} is not a valid notebook: it is not UTF-8 text. Open it in JupyterLab and save it again."
        }
    try:
        return {"parameters": [p.to_dict() for p in notebook_parameters(text, path)]}
    except NotRunnable as e:
        return {"refused": str(e)}


def main(argv: list[str]) -> int:
    path, max_bytes, kind = argv[0], int(argv[1]), argv[2]
    ceiling = max(MEMORY_FLOOR, MEMORY_PER_BYTE * max_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))  # a file that explodes when parsed stops here
    data = sys.stdin.buffer.read(max_bytes + 1)
    sys.stdout.write(json.dumps(answer(data, path, max_bytes, kind)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

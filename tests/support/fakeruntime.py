"""A stand-in for `apptainer` / `singularity` (tests only: no container runtime is packaged here).

`exec` checks it got exactly the portal's container-kernel form
    exec --nv --bind PATHS IMAGE python -c LAUNCHER -f CONNECTION_FILE
records the arguments, then runs the kernel command without a container.
`pull` records its arguments and which credential variables it saw, and acts
as FAKE_RUNTIME_PULL says: ok (writes the image), unauthorized, notfound, nospace,
or hang (one progress line, then nothing, with its output left open).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path


def record(log: str, entry: dict) -> None:
    with open(log, "a") as f:
        f.write(json.dumps(entry) + "\n")


def main(name: str, log: str, argv: list[str]) -> int:
    if argv[:1] == ["exec"]:
        expected_head = ["exec", "--nv", "--bind"]
        if argv[:3] != expected_head or len(argv) != 10 or argv[5:7] != ["python3", "-c"] or argv[8] != "-f":
            sys.stderr.write(f"fake {name}: unexpected arguments {argv}\n")
            return 2
        if not os.path.isfile(argv[4]):
            sys.stderr.write(f"FATAL: could not open image {argv[4]}: no such file\n")
            return 255
        record(log, {"cmd": "exec", "argv": argv, "cuda": os.environ.get("CUDA_VISIBLE_DEVICES")})
        os.execv(sys.executable, [sys.executable, "-c", argv[7], "-f", argv[9]])
    if argv[:1] == ["pull"]:
        prefix = name.upper()
        record(
            log,
            {
                "cmd": "pull",
                "argv": argv,
                "user": os.environ.get(f"{prefix}_DOCKER_USERNAME"),
                "password": os.environ.get(f"{prefix}_DOCKER_PASSWORD"),
            },
        )
        mode = os.environ.get("FAKE_RUNTIME_PULL", "ok")
        messages = {
            "unauthorized": "FATAL: While making image from oci registry: unauthorized: authentication required",
            "notfound": "FATAL: While making image from oci registry: manifest unknown: manifest unknown",
            "nospace": "FATAL: While making image: write /tmp/build: no space left on device",
        }
        if mode == "hang":
            print("INFO:    Copying blob 1 of 2", flush=True)
            time.sleep(3600)
        if mode in messages:
            print("INFO:    Converting OCI blobs to SIF format", flush=True)
            sys.stderr.write(messages[mode] + "\n")
            return 255
        for step in ("Copying blob 1 of 2", "Copying blob 2 of 2", "Creating SIF file..."):
            print(f"INFO:    {step}", flush=True)
            time.sleep(0.01)
        with open(argv[1], "wb") as f:
            f.write(b"SIF stand-in\n")
        return 0
    sys.stderr.write(f"fake {name}: unsupported command {argv[:1]}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))


class FakeRuntime:
    """The stand-in installed as `root/bin/NAME`; `calls()` reads what it recorded."""

    def __init__(self, root: Path, name: str = "apptainer"):
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.log = root / "runtime.jsonl"
        self.path = self.bin / name
        self.path.write_text(
            f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(Path(__file__).resolve().parents[2]))} "
            f'exec {shlex.quote(sys.executable)} -m tests.support.fakeruntime {name} {shlex.quote(str(self.log))} "$@"\n'
        )
        self.path.chmod(0o755)

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

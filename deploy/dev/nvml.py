"""The dev cluster's stand-in GPU driver library: NVML answers for the virtual GPUs (deploy/dev/fakenvml.c)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .common import STATE, run, say

SOURCE = Path(__file__).with_name("fakenvml.c")
LIBRARY = Path("/usr/local/lib/libnvidia-ml.so.1")
STAMP = STATE / "fakenvml.sha256"
READINGS = Path("/var/lib/dsportal-nvml")  # <node>-<index>: "<utilisation %> <MiB used> <processes>", set by the
# tests; outside STATE (root's, 0750): the sessions read it as their users


def ensure_fake_nvml() -> None:
    """Build and install the stand-in once per source change; the readings folder, readable by all."""
    READINGS.mkdir(mode=0o755, parents=True, exist_ok=True)
    READINGS.chmod(0o755)
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    if LIBRARY.exists() and STAMP.exists() and STAMP.read_text() == digest:
        return
    say("building the stand-in NVML library for the virtual GPUs")
    run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", str(LIBRARY), str(SOURCE)])
    LIBRARY.chmod(0o755)
    run(["ldconfig"])
    STAMP.write_text(digest)

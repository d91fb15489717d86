"""What a session or a run ran with, for its receipt (job side, on the compute node, as the user).

The hub knows what was asked for and what Slurm accounted; only the job sees
the environment: the packages of the Python that ran the notebooks (the
portal's and the user's own layer, spawner/job/kernels/userlayer.py), the
modules loaded, the kernels offered, and the commit of the notebooks' folder
when it is a git repository.  `record` gathers them (each with a timeout: a
slow file system costs a missing fact, never the session) and `write` puts them
where the hub reads them as the user (spawner/contract.py:
receipt_environment, at most RECEIPT_ENVIRONMENT_BYTES), in the user's own
private folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from ...contract import RECEIPT_ENVIRONMENT_BYTES, receipt_environment
from ..ownership import NO_ONE_ELSE_WRITES, mine_alone

PACKAGES_TIMEOUT = 30.0  # seconds for the list of installed packages (a cold network file system is slow)
GIT_TIMEOUT = 10.0
MAX_PACKAGES = 3000  # more is cut, and the receipt says so
MAX_MODULES = 200
# The distributions the Python sees, as pip freeze names them; run by that Python (-I: not the folder's modules)
PACKAGES_SCRIPT = (
    "import importlib.metadata as m, json\n"
    "print(json.dumps(sorted({f\"{d.metadata['Name']}=={d.version}\" for d in m.distributions() "
    "if d.metadata['Name']}, key=str.lower)))"
)


def packages(python: str, run=subprocess.run) -> tuple[list[str], str]:
    """(name==version of every package `python` imports, a note when they could not be listed or were cut)."""
    try:
        done = run([python, "-I", "-c", PACKAGES_SCRIPT], capture_output=True, text=True, timeout=PACKAGES_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [], f"the packages could not be listed ({type(e).__name__})"
    try:
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        found = None
    if not isinstance(found, list):
        return [], f"the packages could not be listed (exit {done.returncode})"
    found = [str(p) for p in found]
    if len(found) > MAX_PACKAGES:
        return found[:MAX_PACKAGES], f"{len(found)} packages, the first {MAX_PACKAGES} kept"
    return found, ""


def loaded_modules(environ) -> list[str]:
    """The environment modules loaded (Lmod's and Environment Modules' LOADEDMODULES), in load order."""
    return [m for m in environ.get("LOADEDMODULES", "").split(":") if m][:MAX_MODULES]


def git_state(folder: Path, run=subprocess.run) -> dict | None:
    """{"folder", "commit", "changed"} when `folder` is in a git repository (changed: tracked files differ from
    the commit; None when not asked), else None.

    Asking whether files changed runs the repository's own commands (its clean filters, its fsmonitor), so it is
    asked only of a repository that is wholly this user's and that no one else may change: a run's folder may be
    on shared storage, where another account could plant a `.git` or edit one's config (git's own ownership check
    is off where a site sets safe.directory=*; it is reset here).  The commit itself runs nothing of the
    repository's."""

    def git(*args: str) -> str | None:
        try:
            done = run(
                ["git", "-c", "safe.directory=", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
                + ["-C", str(folder), *args],
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"},
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--verify", "HEAD")
    if not commit:
        return None
    places = (git("rev-parse", "--absolute-git-dir", "--show-toplevel") or "").splitlines()
    changed = None
    if len(places) == 2 and all(
        mine_alone(Path(p), NO_ONE_ELSE_WRITES) for p in (places[0], f"{places[0]}/config", places[1])
    ):
        changes = git("status", "--porcelain", "--untracked-files=no")
        changed = bool(changes) if changes is not None else None
    return {"folder": str(folder), "commit": commit, "changed": changed}


def kernels_offered(specs: dict[str, dict], kernels: dict) -> list[dict]:
    """Each kernel the session offered: its name, and for a container kernel its image (with the digest
    `dsportal images pull` wrote beside it, when there is one)."""
    images = {k["name"]: k["image"] for k in kernels.get("containers", ()) if isinstance(k, dict)}
    offered = []
    for name in specs:
        kernel: dict = {"name": name}
        if name in images:
            kernel["image"] = images[name]
            digest = _read_small(Path(images[name] + ".digest"))
            if digest:
                kernel["digest"] = digest
        offered.append(kernel)
    return offered


def _read_small(path: Path, most: int = 200) -> str:
    try:
        with path.open() as f:
            return f.read(most).strip()
    except (OSError, UnicodeDecodeError):
        return ""


def environment(
    *,
    job_id: str,
    kind: str,
    nodes: str,
    python: str,
    found: tuple[list[str], str],
    modules: list[str],
    kernels: list[dict],
    git: dict | None,
    written: float,
) -> dict:
    """The receipt's environment part (pure): what the hub adds to the history entry; `written`: now (epoch s)."""
    listed, note = found
    portal = next((p.split("==", 1)[1] for p in listed if p.lower().startswith("dsportal==")), "")
    facts = {
        "job_id": job_id,
        "written": round(written),  # the hub takes no file written before its job was submitted (ids reused)
        "kind": kind,
        "nodes": nodes,
        "portal": portal,
        "python": python,
        "packages": listed,
        "modules": modules,
        "kernels": kernels,
        "git": git,
    }
    if note:
        facts["notes"] = [note]
    return facts


def record(home: Path, job_id: str, kind: str, environ, python: str, kernels: list[dict], folder: Path) -> Path:
    """Gather what the job runs with (`python`'s packages, the modules, `folder`'s git commit) and write it for
    the receipt of `job_id` (a session's, a run's or a sweep's `kind`)."""
    facts = environment(
        job_id=job_id,
        kind=kind,
        nodes=environ.get("SLURM_JOB_NODELIST", ""),
        python=python,
        found=packages(python),
        modules=loaded_modules(environ),
        kernels=kernels,
        git=git_state(folder),
        written=time.time(),
    )
    return write(home, job_id, facts)


def write(home: Path, job_id: str, facts: dict) -> Path:
    """The environment in the user's private receipts folder (0700), written whole (a reader never sees half
    a file), within the size the hub reads: the package list is cut first."""
    path = Path(receipt_environment(str(home), job_id))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    text = json.dumps(facts, sort_keys=True)
    if len(text.encode()) > RECEIPT_ENVIRONMENT_BYTES:
        facts = {**facts, "notes": [*facts.get("notes", []), "the package list was cut to fit the receipt"]}
    while len(text.encode()) > RECEIPT_ENVIRONMENT_BYTES and facts["packages"]:
        facts["packages"] = facts["packages"][: len(facts["packages"]) // 2]
        text = json.dumps(facts, sort_keys=True)
    handle, temporary = tempfile.mkstemp(prefix=".receipt-", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path

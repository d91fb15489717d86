"""A session's continuation in its Jupyter server: carrying its kernels out, and taking them back in its successor.

Runs in the session's Jupyter server (in the Slurm job, as the owner).  The hub's continue API
(spawner/hub/continuation/) asks `carry` first: every notebook's kernel writes its variables under
~/.dsportal/continuation/JOB/ (kernels.py), then the hub cancels this job and starts the successor with
`continue_from: JOB`.  The successor's server (`restore_loop`) gives each notebook of that manifest its variables
back as soon as JupyterLab opens the notebook again with a new kernel, once, and deletes the carried files when
every notebook has taken them.  Carried files older than the admin's `keep_hours` are deleted at each start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...job.continuation.carry import private_folder
from ...job.ownership import mine_alone
from ...sessionspec import ContinuationSpec
from . import terminals
from .kernels import carry_out, read_manifest, restore_into

log = logging.getLogger("ServerApp").getChild("dsportal.continuation")

LOOK_SECONDS = 2.0  # how often the successor looks for notebooks opened again
LOOK_HOURS = 12.0  # and for how long at most (the carried files are kept `keep_hours` anyway)


def carried_root(home: str | None = None) -> Path:
    """Where a user's sessions carry their kernels out: one folder per job, in the user's home."""
    return Path(home or os.path.expanduser("~")) / ".dsportal" / "continuation"


def forget_old(root: Path, keep_hours: float, now: float | None = None, keep: str = "") -> list[str]:
    """Delete the carried folders under `root` older than `keep_hours` (not `keep`'s); -> the names deleted.  Only
    folders that are this user's alone: nothing another account placed here is followed or removed."""
    if not root.is_dir() or not mine_alone(root):
        return []
    now = time.time() if now is None else now
    gone = []
    for folder in sorted(root.iterdir()):
        if folder.name == keep or folder.is_symlink() or not folder.is_dir():
            continue
        if now - folder.stat().st_mtime > keep_hours * 3600:
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder.name)
    return gone


def summary(manifest: dict) -> dict:
    """Per notebook: how many variables were carried, and what was not, with why (the answers' words)."""
    notebooks = {}
    for path, entry in manifest.items():
        report = entry.get("report", entry) if isinstance(entry, dict) else {}
        notebooks[path] = {
            "carried": len(report.get("carried", [])),
            "not": report.get("not", {}),
            **({"refused": report["refused"]} if report.get("refused") else {}),
            **({"busy": True} if report.get("busy") else {}),
        }
    return notebooks


@dataclass
class Continuation:
    """This session's continuation: what it carried out, and what it took back from the session it continues."""

    spec: ContinuationSpec
    job_id: str
    root: Path
    manifest: dict = field(default_factory=dict)  # what the session it continues carried out
    terminals: list = field(default_factory=list)  # its terminals: name and folder, reopened at the start
    reopened: list = field(default_factory=list)  # the names of those reopened
    restored: dict = field(default_factory=dict)  # notebook path -> report, as each was taken back
    carrying: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def carry(self, kernels, sessions: list[dict], terminal_manager=None) -> dict:
        """Every notebook's kernel writes its variables into this job's folder, and the terminals their folders;
        -> the summary per notebook."""
        async with self.carrying:  # one carry-out at a time: the hub's retry must not race the first
            base = self.root / self.job_id
            shutil.rmtree(base, ignore_errors=True)  # an earlier, unfinished try of this job's
            private_folder(self.root)
            manifest = await carry_out(kernels, sessions, base, self.spec.max_bytes, self.spec.dump_seconds)
            terminals.write(base, terminals.places(terminal_manager))
        log.warning("dsportal: carried out %d notebook(s)' kernels for the next session", len(manifest))
        return summary(manifest)

    def answer(self) -> dict:
        """What the successor says: the job it continues, what each notebook took back, what waits to open."""
        return {
            "continued_from": self.spec.continue_from,
            "restored": summary(self.restored),
            "waiting": sorted(set(self.manifest) - set(self.restored)),
            "terminals": list(self.reopened),
        }

    def reopen_terminals(self, terminal_manager, home: str) -> None:
        """The terminals of the session this one continues, open again in their folders (before the page asks)."""
        if terminal_manager is None or not self.terminals:
            return
        try:
            self.reopened = terminals.reopen(terminal_manager, self.terminals, home)
        except Exception:  # a terminal that does not open loses nothing of the notebooks'
            log.exception("dsportal: reopening the terminals of the session this one continues failed")
        log.warning("dsportal: reopened %d terminal(s) in their folders", len(self.reopened))

    async def restore_loop(self, kernels, list_sessions) -> None:
        """Give each notebook of the manifest its variables back as it opens again; then delete the files."""
        done: set[str] = set()
        deadline = time.monotonic() + min(LOOK_HOURS, self.spec.keep_hours) * 3600
        while set(self.manifest) - done and time.monotonic() < deadline:
            try:
                found = await restore_into(kernels, await list_sessions(), self.manifest, done, self.spec.dump_seconds)
            except Exception:  # the loop must outlive one bad look (a kernel gone meanwhile)
                log.exception("dsportal: taking carried variables back failed")
                found = {}
            for path, report in found.items():
                self.restored[path] = report
                log.warning("dsportal: %s took back %d variable(s)", path, len(report.get("carried", [])))
            await asyncio.sleep(LOOK_SECONDS)
        shutil.rmtree(self.root / self.spec.continue_from, ignore_errors=True)


def prepare(spec: ContinuationSpec, job_id: str, home: str | None = None) -> Continuation:
    """At the server's start: old carried folders deleted, and the manifest of the session this one continues."""
    root = carried_root(home)
    forget_old(root, spec.keep_hours, keep=spec.continue_from)
    continuation = Continuation(spec=spec, job_id=job_id, root=root)
    if spec.continue_from:
        continuation.manifest = read_manifest(root / spec.continue_from)
        continuation.terminals = terminals.read(root / spec.continue_from)
    return continuation

"""What a user finds in their home at session start: ~/templates and storage links.

Runs in the session job, as the user.  A notebook the user edited is never
overwritten: ~/templates/.dsportal-templates.json remembers which version of
each template was delivered, so an edit is told apart from an old template.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

MANIFEST = ".dsportal-templates.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def beside_name(path: Path, digest: str) -> Path:
    """Where a newer template goes when the user has edited theirs (never over another file)."""
    for n in range(1, 100):
        label = "new template" if n == 1 else f"new template {n}"
        candidate = path.with_name(f"{path.stem} ({label}){path.suffix}")
        if not candidate.exists() or _digest(candidate) == digest:
            return candidate
    raise FileExistsError(f"too many new templates beside {path}")


def sync_templates(source: Path, target: Path) -> list[str]:
    """Bring `target` up to date with `source`; return what was done, one line each."""
    done: list[str] = []
    target.mkdir(parents=True, exist_ok=True)
    manifest_path = target / MANIFEST
    try:
        delivered = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        delivered = {}
    for src in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = src.relative_to(source).as_posix()
        dst = target / rel
        new = _digest(src)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            done.append(f"added {rel}")
        else:
            current = _digest(dst)
            if current == new:
                pass
            elif current == delivered.get(rel):  # untouched old template: update it
                shutil.copyfile(src, dst)
                done.append(f"updated {rel}")
            elif new != delivered.get(rel):  # edited by the user, and the template changed
                beside = beside_name(dst, new)
                shutil.copyfile(src, beside)
                done.append(f"kept your edited {rel}; the new template is {beside.name}")
        delivered[rel] = new
    manifest_path.write_text(json.dumps(delivered, indent=1, sort_keys=True))
    return done


def note_path(home: Path, name: str) -> Path:
    return home / f"{name} is not available.txt"


def link_storage(home: Path, storage: dict[str, str]) -> list[str]:
    """~/NAME -> PATH for each storage mount; a missing mount leaves a note file instead."""
    done: list[str] = []
    for name, path in storage.items():
        link, note = home / name, note_path(home, name)
        if not os.path.isdir(path):
            note.write_text(
                f"The shared storage {name} ({path}) is not mounted on this compute node.\n"
                "Your session works without it; tell the cluster admins if you need it.\n"
            )
            done.append(f"storage {name}: {path} is not mounted on this node; wrote '{note.name}'")
            continue
        note.unlink(missing_ok=True)
        if link.is_symlink():
            if os.readlink(link) == path:
                continue
            link.unlink()
        elif link.exists():
            done.append(f"storage {name}: ~/{name} exists and is not a link; left it alone")
            continue
        link.symlink_to(path)
        done.append(f"storage {name}: linked ~/{name} -> {path}")
    return done

"""A receipt: what a session or a run asked for, got, ran with and used, in one JSON document (pure; hub side).

The hub has what was asked for and what Slurm accounted (the user's record:
spawner/hub/session/userrecord.py); the job wrote what it ran with
(spawner/job/receipts/environment.py), which `environment_of` reads back
typed: a file of the user's is never trusted, so only known keys of known
types are kept, each bounded.  `what_is_gone` says, for "start again
exactly", what of a receipt can no longer be had here.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

RECEIPT_FORMAT = 1  # the receipt's own version, its first key
MAX_TEXT = 500  # characters of one string of the job's file kept
MAX_ITEMS = {"packages": 3000, "modules": 200, "kernels": 100, "notes": 5}
PACKAGE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,199})==([^\s=]{1,100})")


NOT_RECORDED = "the job recorded no environment (it started before this portal version, or did not start)"
CLOCK_SLACK = 300  # seconds a node's clock may be behind the hub's


class ReceiptMissing(LookupError):
    """No session or run of the user's has this job id (str: the words)."""


def _text(value: object) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _texts(value: object, most: int) -> list[str]:
    return [v[:MAX_TEXT] for v in value if isinstance(v, str)][:most] if isinstance(value, list) else []


def environment_of(text: str, job_id: str, submitted: float) -> tuple[dict | None, str]:
    """The job's environment file -> (its facts, typed and bounded; "" ) or (None, why it is not there).
    `submitted`: when the hub submitted the job (epoch s); a file written before it is an earlier job's of the same
    id (Slurm's ids start again after a reinstall)."""
    if not text.strip():
        return None, NOT_RECORDED
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: brackets nested thousands deep
        return None, "the job's environment file does not read as JSON"
    if not isinstance(data, dict) or data.get("job_id") != job_id:
        return None, "the job's environment file is of another job"
    written = data.get("written")
    if not isinstance(written, int | float) or isinstance(written, bool) or written < submitted - CLOCK_SLACK:
        return None, NOT_RECORDED
    git = data.get("git")
    kernels = (
        [
            {key: _text(k[key]) for key in ("name", "image", "digest") if isinstance(k.get(key), str)}
            for k in data.get("kernels", [])[: MAX_ITEMS["kernels"]]
            if isinstance(k, dict)
        ]
        if isinstance(data.get("kernels"), list)
        else []
    )
    return {
        "nodes": _text(data.get("nodes")),
        "portal": _text(data.get("portal")),
        "python": _text(data.get("python")),
        "packages": [p for p in _texts(data.get("packages"), MAX_ITEMS["packages"]) if PACKAGE.fullmatch(p)],
        "modules": _texts(data.get("modules"), MAX_ITEMS["modules"]),
        "kernels": [k for k in kernels if k.get("name")],
        "git": {
            "folder": _text(git.get("folder")),
            "commit": _text(git.get("commit")),
            "changed": git.get("changed") if isinstance(git.get("changed"), bool) else None,
        }
        if isinstance(git, dict)
        else None,
        "notes": _texts(data.get("notes"), MAX_ITEMS["notes"]),
    }, ""


def session_receipt(entry: dict, logged: dict | None, environment: dict | None, why_none: str, user: str) -> dict:
    """A session's receipt from its history entry, its usage log line and the job's environment."""
    usage = entry.get("usage") or {}
    return {
        "receipt": RECEIPT_FORMAT,
        "kind": "session",
        "user": user,
        "job_id": entry.get("job_id", ""),
        "name": entry.get("name", ""),
        "request": dict(entry.get("options") or {}),
        "summary": entry.get("summary", ""),
        "submitted": entry.get("submitted", ""),
        "ended": entry.get("ended", ""),
        "why": entry.get("why", ""),
        "used": {"lines": list(usage.get("lines") or []), "source": usage.get("source", "")},
        "accounted": _accounted(logged),
        "environment": environment,
        "environment_missing": why_none,
    }


def run_receipt(run: dict, logged: dict | None, environment: dict | None, why_none: str, user: str) -> dict:
    """A run's (or a sweep's) receipt from the hub's record of it and the job's environment."""
    settings = dict(run.get("settings") or {})
    return {
        "receipt": RECEIPT_FORMAT,
        "kind": "sweep" if "sweep" in settings else "run",
        "user": user,
        "job_id": run.get("job_id", ""),
        "path": settings.get("path", ""),
        "request": settings,
        "summary": run.get("summary", ""),
        "submitted": run.get("submitted", ""),
        "ended": run.get("ended", ""),
        "state": run.get("state", ""),
        "why": run.get("why", ""),
        "accounted": _accounted(logged),
        "environment": environment,
        "environment_missing": why_none,
    }


def submitted_at(entry: dict) -> float:
    """When the hub submitted a session or run (epoch s): a run's `submitted_ts`, else the ISO minute (hub's
    local time); 0 when unknown."""
    if isinstance(entry.get("submitted_ts"), int | float):
        return float(entry["submitted_ts"])
    try:
        return datetime.fromisoformat(entry.get("submitted") or "").timestamp()
    except (TypeError, ValueError):
        return 0.0


def _accounted(logged: dict | None) -> dict | None:
    """What the usage log holds of the job: hours and GPU-hours (Slurm's once accounted), efficiency, and the GPUs'
    energy where NVML reported it."""
    if not logged:
        return None
    keys = ("partition", "gpus", "hours", "gpu_hours", "gpu_mean", "gpus_worked", "cpu_efficiency", "accounted")
    if logged.get("gpu_energy_wh") is not None:  # where NVML reports power
        keys += ("gpu_energy_wh",)
    return {key: logged.get(key) for key in keys}


def what_is_gone(
    receipt: dict,
    offered: dict[str, set[str]],
    installed: dict[str, str] | None,
    images: dict[str, str] | None = None,
) -> list[str]:
    """What of the receipt cannot be had again here, in words: a partition or GPU type no longer offered
    (`offered`: partition -> its GPU types), a container kernel no longer offered or whose image changed
    (`images`: each container kernel's name -> its image's digest now, "" when it has none; None: unknown), a package of the
    portal's environment at another version now (`installed`: name -> version, None when unknown).  Empty:
    everything it asked for is here."""
    kernels = (receipt.get("environment") or {}).get("kernels", [])
    gone = _images_gone(kernels, images) if images is not None else []
    request = receipt.get("request") or {}
    partition, gpu_type = request.get("partition") or "", request.get("gpu_type") or ""
    if partition and partition not in offered:
        gone.append(f"partition {partition} is no longer offered")
    elif gpu_type and gpu_type not in offered.get(partition, set()):
        gone.append(f"GPU type {gpu_type} is no longer offered on {partition or 'the default partition'}")
    environment = receipt.get("environment") or {}
    if installed is not None:
        changed = []
        for package in environment.get("packages", []):
            name, _, version = package.partition("==")
            now = installed.get(_normal(name))
            if now is not None and now != version:
                changed.append(f"{name} {version} (now {now})")
        if changed:
            gone.append("the portal's environment has other versions of " + ", ".join(changed[:20]))
            if len(changed) > 20:
                gone[-1] += f" and {len(changed) - 20} more"
    return gone


def _images_gone(kernels: list[dict], images: dict[str, str]) -> list[str]:
    gone = []
    for kernel in kernels:
        name, digest = kernel.get("name", ""), kernel.get("digest", "")
        if "image" not in kernel:
            continue  # not a container kernel
        if name not in images:
            gone.append(f"container kernel {name} is no longer offered")
        elif digest and images[name] != digest:
            gone.append(f"container kernel {name}'s image has changed ({digest} then, {images[name] or 'unknown'} now)")
    return gone


def _normal(name: str) -> str:
    """A package's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_of(packages: list[str]) -> dict[str, str]:
    """name==version lines -> {normal name: version}."""
    found = {}
    for package in packages:
        match = PACKAGE.fullmatch(package)
        if match:
            found[_normal(match.group(1))] = match.group(2)
    return found

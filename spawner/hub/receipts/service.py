"""A receipt of the user's, put together (hub side): their record, the job's environment read as them, and what
of it this hub offers now (spawner/hub/receipts/receipt.py)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import time
from pathlib import Path

from portal.version import version

from ...contract import RECEIPT_ENVIRONMENT_BYTES, receipt_environment
from ..session.userrecord import user_record
from ..slurm.client import SlurmError
from ..slurm.clusterinfo import partition_gpu_types
from ..slurm.services import HubServices
from .receipt import (
    ReceiptMissing,
    environment_of,
    installed_of,
    run_receipt,
    session_receipt,
    submitted_at,
    what_is_gone,
)

INSTALLED_SECONDS = 300.0  # how long the list of the session environment's packages is reused


async def receipt(services: HubServices, spawner, job_id: str) -> dict:
    """The receipt of the user's session or run of `job_id`; ReceiptMissing with words when they have none."""
    record = user_record(spawner)
    entry = next((e for e in record.history if e.get("job_id") == job_id), None)
    run = next((r for r in record.runs if r.get("job_id") == job_id), None) if entry is None else None
    if entry is None and run is None:
        raise ReceiptMissing(
            f"No session or run of yours with job {job_id} is in your history (the hub keeps your last "
            f"{services.settings.sessions.history} sessions and {services.settings.runs.keep} runs)."
        )
    logged = next((e for e in record.usage_log if e.get("job_id") == job_id), None)
    unix = spawner.unix_account()
    environment, missing = await _environment(services, unix.name, unix.home, job_id, submitted_at(entry or run))
    user = spawner.user.name
    made = (session_receipt if entry is not None else run_receipt)(entry or run, logged, environment, missing, user)
    made["portal_now"] = version()
    offered, installed = await _offered(services), await installed_packages(services)
    made["again"] = {"gone": what_is_gone(made, offered, installed, await _images(services))}
    return made


async def _environment(
    services: HubServices, username: str, home: str, job_id: str, submitted: float
) -> tuple[dict | None, str]:
    """The job's environment file, read as the user (at most RECEIPT_ENVIRONMENT_BYTES), typed."""
    try:
        text = await services.client.read_as(username, receipt_environment(home, job_id), RECEIPT_ENVIRONMENT_BYTES)
    except SlurmError:  # missing (the job never started, or started before receipts) or unreadable
        text = ""
    return environment_of(text, job_id, submitted)


async def _offered(services: HubServices) -> dict[str, set[str]]:
    """Each partition users may choose now, with the GPU types Slurm has there (the hub's shared answer)."""
    slurm = services.settings.slurm
    try:
        types = partition_gpu_types(await services.cluster.nodes())
    except SlurmError:
        types = {}
    return {p.name: types.get(p.name, set()) - set(slurm.hidden_gpu_types) for p in slurm.partitions}


async def _images(services: HubServices) -> dict[str, str]:
    """Each container kernel the admin offers now -> its image's digest (`dsportal images pull` writes it beside
    the image; "" without one).  Only the admin's own paths are read, never one a receipt names."""
    kernels = services.settings.kernels.containers
    digests = await asyncio.to_thread(lambda: [_digest(k.image) for k in kernels])
    return dict(zip([k.name for k in kernels], digests, strict=True))


def _digest(image: str) -> str:
    try:
        with open(f"{image}.digest") as f:
            return f.read(200).strip()
    except (OSError, UnicodeDecodeError):
        return ""


async def installed_packages(services: HubServices) -> dict[str, str] | None:
    """The session environment's packages (environment.prefix), listed in a thread and reused for
    INSTALLED_SECONDS; None where the hub cannot read it (another machine's path)."""
    kept = services.shared(("receipts", "installed"), lambda: {"at": -INSTALLED_SECONDS, "listing": None})
    if time.monotonic() - kept["at"] >= INSTALLED_SECONDS and kept["listing"] is None:
        # one listing at a time, for every request that finds the last one too old
        kept["listing"] = asyncio.ensure_future(asyncio.to_thread(_listed, services.settings.environment.prefix))
        try:
            kept["packages"] = await asyncio.shield(kept["listing"])
            kept["at"] = time.monotonic()
        finally:
            kept["listing"] = None
    elif kept["listing"] is not None:
        return await asyncio.shield(kept["listing"])
    return kept.get("packages")


def _listed(prefix: str) -> dict[str, str] | None:
    folders = [str(p) for p in Path(prefix).glob("lib/python3*/site-packages") if p.is_dir()]
    if not folders:
        return None
    found = [f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=folders)]
    return installed_of(found)

"""What the home page's session card shows, from what the hub already knows (pure; runs in the hub).

Built from the spawner's saved state and the shared, cached job listing:
a page view never makes the hub ask Slurm.
"""

from __future__ import annotations

from datetime import datetime

from ...slurmgres import share_words
from ..clock.extension import Limits, extension, seconds_left
from ..request.resources import Resources, duration_words
from ..slurm.client import JobInfo


def session_card(
    job_id: str,
    info: JobInfo | None,
    resources: Resources | None,
    *,
    start_done: bool,
    stopping: bool,
    message: str,
    minutes: int,
    limits: Limits,
    now: datetime,
    gpu_type: str = "",
) -> dict:
    """The session's state and facts, and the buttons that apply ("state": none / queued / starting /
    running / stopping); `gpu_type`: the GPU type it asked for or Slurm gave it, in words."""
    if not job_id:
        return {"state": "none"}
    if stopping:
        state = "stopping"
    elif start_done:
        state = "running"
    elif info is not None and info.pending:
        state = "queued"
    else:
        state = "starting"
    card = {
        "state": state,
        "job_id": job_id,
        "message": message,
        "node": info.node if info else "",
        "end": info.end if info and state == "running" else "",
        "seconds_left": seconds_left(info, now) if state == "running" else None,
        "limit": duration_words(minutes) if minutes else "",
    }
    if resources is not None:
        card.update(
            partition=resources.partition,
            gpus=resources.gpus,
            cores=resources.cpus,
            memory_gb=round(resources.memory_mib / 1024, 1),
            summary=resources.summary(),
        )
        if resources.shards:  # a share of a GPU: what it holds, in words
            words = share_words(resources.shards, resources.per_gpu)
            card.update(shards=resources.shards, share=words, gpu_share=resources.gpu_share)
    if gpu_type:
        card["gpu_type"] = gpu_type
    new, why = extension(minutes, limits)
    card["extend"] = (
        {"allowed": state == "running" and new is not None, "why_not": why, "step": duration_words(limits.step_minutes)}
        if limits.allow_extend
        else None
    )
    return card

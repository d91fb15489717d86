"""The fastest start: for the shape a user asked, the alternatives that fit and when Slurm would start each.

For N GPUs and H hours on a partition (and a GPU type), the candidates are the same request on "any type" (Slurm
takes whichever type is free first: --gres=gpu:N) and on each other type of the partition, on each other
partition with room for N GPUs, a share of one GPU where the partition has shares and one GPU was asked (a share is
often free sooner), and with half the hours (a shorter job fits the gaps Slurm's backfill leaves).  At
most MAX_ALTERNATIVES, each answered as the estimate API answers it (the shared sinfo, else Slurm's own
`sbatch --test-only`, cached per shape for everyone and bounded per user), sorted by when they would start.
`candidates` and `difference` are pure and tested by equality.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

from portal.settings import SlurmSettings

from ...slurmgres import share_words
from ..request.options import OptionsError, SessionRequest, SlurmFacts, parse_with
from .client import SlurmError
from .clusterinfo import nodes_facts
from .services import HubServices, TooManyEstimates

MAX_ALTERNATIVES = 6  # the asked shape included: at most 5 more questions for Slurm, each cached for everyone
NOT_ESTIMATED = "not estimated now (too many new estimates this minute); try again in a minute"


def candidates(
    request: SessionRequest, slurm: SlurmSettings, types: dict[str, set[str]], shards: dict[str, int] | None = None
) -> list[SessionRequest]:
    """The asked request first, then what else fits it, at most MAX_ALTERNATIVES in all; `shards`: the most
    shards one node of each partition has."""
    found = [request]

    def add(other: SessionRequest) -> None:
        if other not in found and len(found) < MAX_ALTERNATIVES:
            found.append(other)

    if request.gpus:
        if request.gpu_type:
            add(replace(request, gpu_type=""))
        offered = sorted(types.get(request.partition, set()) - set(slurm.hidden_gpu_types) - {""})
        if len(offered) > 1:
            for gpu_type in offered:
                add(replace(request, gpu_type=gpu_type))
    if request.gpus == 1 and slurm.shards.per_gpu > 1 and (shards or {}).get(request.partition):
        add(replace(request, gpus=0, gpu_type="", shards=1))  # a share of a GPU, often free sooner
    for partition in slurm.partitions:
        if partition.name == request.partition or partition.max_gpus < request.gpus:
            continue
        if request.shards and not (partition.max_gpus and (shards or {}).get(partition.name, 0) >= request.shards):
            continue  # a share only where the partition has shares
        add(replace(request, partition=partition.name, gpu_type=""))
    if request.hours >= 2:
        add(replace(request, hours=math.floor(request.hours * 2) / 4))  # half, in quarter hours
    return found


def difference(asked: SessionRequest, other: SessionRequest, slurm: SlurmSettings) -> str:
    """How `other` differs from what was asked, in words ('A100 80 GB on debug, 4 h instead of 8')."""
    words = []
    if other.shards != asked.shards:
        words.append(share_words(other.shards, slurm.shards.per_gpu) if other.shards else f"{other.gpus} GPU(s)")
    elif other.gpu_type != asked.gpu_type:
        words.append(slurm.gpu_label(other.gpu_type) if other.gpu_type else "any GPU type (whichever is free first)")
    if other.partition != asked.partition:
        shown = next((p.display_name or p.name for p in slurm.partitions if p.name == other.partition), other.partition)
        words.append(f"on {shown}")
    if other.hours != asked.hours:
        words.append(f"{other.hours:g} h instead of {asked.hours:g}")
    return ", ".join(words) or "as asked"


def options_of(request: SessionRequest) -> dict[str, str]:
    """A request as the form and the estimate API send it."""
    query = {"partition": request.partition, "gpus": str(request.gpus), "hours": f"{request.hours:g}"}
    if request.shards:
        query["shards"] = str(request.shards)
    chosen = {"gpu_type": request.gpu_type, "account": request.account, "qos": request.qos}
    return {**query, **{k: v for k, v in chosen.items() if v}}


async def alternatives(services: HubServices, username: str, query: dict) -> dict:
    """Each alternative with its options, its words and when it would start; ValueError for refused options,
    SlurmError when Slurm does not answer."""
    slurm = services.settings.slurm
    try:
        nodes = await services.cluster.nodes()
        known = SlurmFacts(**nodes_facts(nodes))
        asked = parse_with(query, slurm, known)
    except OptionsError as e:
        raise ValueError(str(e)) from None

    async def when(request: SessionRequest) -> dict:
        try:
            answer = await services.estimate(username, options_of(request))
        except TooManyEstimates:
            answer = {"starts_now": False, "start": None, "message": NOT_ESTIMATED}
        except ValueError as e:  # refused for this user (e.g. their account's QOS or allocation): this one only
            answer = {"starts_now": False, "start": None, "message": f"not available to you: {e}"[:300]}
        except SlurmError as e:  # e.g. a partition this user may not use: this one only
            answer = {"starts_now": False, "start": None, "message": f"not available to you: {e.stderr or e}"[:300]}
        return {
            "options": options_of(request),
            "asked": request == asked,
            "difference": difference(asked, request, slurm),
            **answer,
        }

    found = await asyncio.gather(*(when(r) for r in candidates(asked, slurm, known.gpu_types, known.shards)))
    # now first, then by Slurm's expected start; those without an estimate last; the asked one first among equals
    ordered = sorted(found, key=lambda a: (not a["starts_now"], a["start"] is None, a["start"] or "", not a["asked"]))
    return {"alternatives": ordered}

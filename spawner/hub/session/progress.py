"""What the progress page and the home page say: Slurm's state in a data scientist's words (pure)."""

from __future__ import annotations

from datetime import datetime

from ..slurm.client import JobInfo

# Slurm's pending reasons in words a data scientist understands.
PENDING_REASONS = {
    "Resources": "waiting for GPUs to become free",
    "Priority": "other jobs are ahead in the queue",
    "None": "about to be scheduled",
    "BeginTime": "waiting for its start time",
    "ReqNodeNotAvail": "the requested nodes are not available",
    "PartitionNodeLimit": "the request is larger than the partition allows",
    "QOSMaxGRESPerUser": "you already use as many GPUs as your quota allows",
    "AssocGrpGRES": "your group already uses as many GPUs as its quota allows",
    "Reservation": "waiting for its reservation",
}


def never_starts(reason: str) -> str:
    """Why a job pending for Slurm's `reason` will not start by waiting ("" when it may): a per-job limit of its
    account (association) or QOS (AssocMax*PerJob*, QOSMax*PerJob*), or an allocation used up (AssocGrp*Minutes,
    QOSGrp*Minutes; the *RunMinutes limits clear as running jobs go on)."""
    if reason.startswith(("Assoc", "QOS")) and "PerJob" in reason:
        return "it asks for more than one job may have under its Slurm account or QOS"
    if reason.startswith(("AssocGrp", "QOSGrp")) and reason.endswith("Minutes") and not reason.endswith("RunMinutes"):
        return "its Slurm account's allocation is used up"
    return ""


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def place_in_queue(order: list[str], job_id: str) -> int | None:
    """1 for the first of the partition's pending jobs (Slurm's priority order), None if not among them."""
    return order.index(job_id) + 1 if job_id in order else None


def start_progress(
    job_id: str, info: JobInfo | None, partition: str, port: int, answering: bool, place: int | None = None
) -> dict:
    """{"progress": percent for the page's bar, "message": the line the user reads}."""
    if not job_id:
        return {"progress": 10, "message": "Submitting your session to Slurm..."}
    if info is None or info.pending:
        reason = info.reason if info else ""
        words = PENDING_REASONS.get(reason, "waiting in the queue")
        detail = f" ({reason})" if reason and reason != "None" else ""
        message = f"Job {job_id} is queued on {partition}: {words}{detail}."
        if info is not None and reason not in ("", "None"):  # really waiting: say where and until when
            if place:
                message += f" It is {ordinal(place)} in line there."
            message += (
                f" Slurm expects it to start at {info.start.replace('T', ' ')[:16]}."
                if info.start
                else " Slurm gives no start estimate yet."
            )
        return {"progress": 25, "message": message}
    if port == 0:
        return {"progress": 50, "message": f"Job {job_id} is running on {info.node}; starting JupyterLab..."}
    if not answering:
        return {"progress": 70, "message": f"JupyterLab is loading on {info.node}..."}
    return {"progress": 90, "message": f"JupyterLab is up on {info.node}; connecting..."}


def clock(at: datetime, now: datetime) -> str:
    """'at 14:05' today, else 'on 21 Nov at 14:05' (the hub's local time)."""
    return at.strftime("at %H:%M") if at.date() == now.date() else at.strftime("on %-d %b at %H:%M")


def ended_words(job_id: str, info: JobInfo | None, limit: str, at: datetime, now: datetime) -> str:
    """Why a session ended without the user stopping it, from Slurm's final state and reason (pure)."""
    when = clock(at, now)
    state = info.state if info else ""
    if state == "TIMEOUT" or (info is not None and info.reason == "TimeLimit"):  # also while still COMPLETING
        return (
            f"Your session reached its time limit ({limit}) {when}."
            if limit
            else f"Your session reached its time limit {when}."
        )
    if state == "PREEMPTED":
        return f"Your session was preempted {when}: Slurm gave its resources to a job of higher priority."
    if state == "NODE_FAIL":
        node = f" ({info.node})" if info.node else ""
        return f"Your session ended {when} because its node{node} failed."
    if state == "CANCELLED":
        return f"Your session was cancelled outside the portal {when} (by a cluster admin, or with scancel)."
    if state == "OUT_OF_MEMORY":
        return f"Your session ran out of memory and ended {when}; start it with more GPUs (each brings memory)."
    if state in ("FAILED", "BOOT_FAIL"):
        return (
            f"Your session ended {when} with an error ({state.lower()}); its log is ~/.dsportal-session-{job_id}.log."
        )
    if state == "COMPLETED":
        return f"Your session ended {when}: JupyterLab shut down."
    if info is not None:  # e.g. COMPLETING with no reason given
        return f"Your session ended {when}."
    return f"Your session (job {job_id}) ended {when} or earlier; Slurm no longer lists it."

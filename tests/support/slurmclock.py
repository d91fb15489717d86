"""A Slurm job's real end as the tests see it: its EndTime, and waits whose deadline is that end.

A test of a session at its time limit races nothing but the limit itself: it
waits for what the portal does before the end until the end (not for a fixed
number of seconds that a slow start or a slow page eats into), and says how
much time was left when a step came too late.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

from tests.support.cluster import Cluster
from tests.support.http import wait_until


def end_time(scontrol_text: str) -> float:
    """The job's EndTime in `scontrol show job`'s text, as a Unix time (Slurm writes the machine's local time)."""
    found = re.search(r"\bEndTime=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\b", scontrol_text)
    assert found, f"no EndTime in scontrol's answer: {scontrol_text!r}"
    return datetime.fromisoformat(found.group(1)).timestamp()


def seconds_left(job_id: str) -> float:
    """Seconds until Slurm ends the job (negative once its end has passed)."""
    return end_time(Cluster.scontrol(job_id)) - time.time()


def before_the_end(job_id: str, predicate, what: str, grace: float = 0.0):
    """The first truthy value of predicate(), polled until the job's time limit (plus `grace` seconds): what the
    portal must do before the end, waited for as long as the session lasts."""
    return wait_until(predicate, max(seconds_left(job_id) + grace, 1.0), f"{what} (before the time limit)", every=0.3)

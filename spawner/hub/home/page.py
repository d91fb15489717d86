"""The home page's data: a user's session card, history and presets (hub side).

Read from the spawner's saved record and the shared, cached job listing, so a
page view never makes the hub ask Slurm.  The page gets it through
`c.JupyterHub.template_vars` (`dsportal_home`, spawner/hub/wiring/hubconfig.py) on its
first render and from GET /hub/api/dsportal/session (spawner/hub/home/handlers.py)
on each refresh: both read `home_data`.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from ..base.pagescripts import script_path
from ..clock.extension import limits_of
from ..clock.lead import continues_automatically, lead_seconds
from ..request.sessionlimits import NAME_PATTERN, NAME_RULE, user_sessions
from ..session.lookup import is_portal_spawner, portal_spawner
from ..session.progress import start_progress
from ..session.usagelog import live_usage
from ..session.userrecord import user_record
from ..slurm.services import services_for
from .dashboard import session_card

if TYPE_CHECKING:
    from ..request.resources import Resources
    from ..session.spawner import SlurmGPUSpawner

NO_SESSION = {"state": "none"}


def card(spawner: SlurmGPUSpawner) -> dict:
    """The session card (spawner/hub/home/dashboard.py) of the spawner's current session."""
    record, job_id = spawner.record, spawner.job_id
    limits = limits_of(spawner.settings.slurm)
    info = (spawner.slurm_client.watcher.last_known(job_id) or spawner.job_info) if job_id else None
    resources = spawner.current_resources() if job_id else None
    stopping = spawner.pending == "stop" or bool(record.stopping and spawner.stopping_message())
    if record.stopping and not stopping:  # handed over, and the latest listing shows it gone
        return session_card(
            "", None, None, start_done=False, stopping=False, message="", minutes=0, limits=limits, now=datetime.now()
        )
    if not job_id:
        message = ""
    elif stopping:  # a stop under way now, or one handed over to the reconciler
        message = spawner.stopping_message() or f"Stopping your session: Slurm is cancelling job {job_id}."
    else:
        message = start_progress(
            job_id,
            info,
            resources.partition if resources else "the cluster",
            spawner.port,
            spawner.answering,
            spawner.queue_place,
        )["message"]
    minutes = record.minutes or (resources.minutes if resources else 0)
    made = session_card(
        job_id,
        info,
        resources,
        gpu_type=gpu_type_words(spawner, resources, info.node if info else ""),
        start_done=record.start_done,
        stopping=stopping,
        message=message,
        minutes=minutes,
        limits=limits,
        now=datetime.now(),
    )
    # a running session may continue in a new job (spawner/hub/continuation/); one that did says what it carried
    if made["state"] == "running":
        made["continuable"] = spawner.settings.sessions.continuation.enabled
        if continues_automatically(spawner.settings, minutes):  # never a job too short (clock/lead.py)
            made["auto_continue"] = bool(user_record(spawner).auto_continue.get(spawner.name))
            made["auto_lead_minutes"] = math.ceil(lead_seconds(spawner.settings) / 60)
    waiting = user_record(spawner).continuations.get(spawner.name, "")
    if spawner.continued and made["state"] != "none":
        made["continued"] = spawner.continued
    elif waiting and made["state"] == "none":
        made["continued"] = f"The variables job {waiting} carried wait for this session's next start."
    return made


def gpu_type_words(spawner: SlurmGPUSpawner, resources: Resources | None, node: str) -> str:
    """The GPU type a session asked for; for "any type", the one Slurm gave it (its node's, from the latest shared
    sinfo: no new call), 'A100 80 GB (whichever was free first)'; "" when neither is known."""
    if resources is None or not resources.gpus:
        return ""
    if resources.gpu_type:
        return resources.gpu_label or resources.gpu_type
    nodes = services_for(spawner.config_file).cluster.latest_nodes()
    types = {kind for n in nodes if n.node == node for kind, _, _ in n.gpu_types if kind}
    if len(types) != 1:
        return ""
    return f"{spawner.settings.slurm.gpu_label(types.pop())} (whichever was free first)"


def session_entry(spawner: SlurmGPUSpawner) -> dict:
    """One session's part of the home page: its card, where it is, why it last ended."""
    return {
        "name": spawner.name,
        "session": card(spawner),
        "last_end": "" if spawner.active else spawner.record.last_end,
        "server_url": spawner.session_url() if spawner.ready else "",
        # what it used so far, from its last report; no advice while it runs
        "usage": live_usage(spawner.record.usage, spawner.current_resources()) if spawner.job_id else [],
    }


def usage_view(entry: dict) -> dict:
    """What the page shows of a history entry's usage: its lines and advice, not the tally behind them (pure)."""
    usage = entry.get("usage")
    if not isinstance(usage, dict):
        return {}
    return {"usage": {"lines": list(usage.get("lines", [])), "advice": usage.get("advice", "")}}


def merged_history(history: list[dict], keep: int) -> list[dict]:
    """The last `keep` sessions of all the user's sessions (the user's record's history), newest first, each with
    its session's name (pure)."""
    entries = [{"name": "", **entry, **usage_view(entry)} for entry in history]
    return sorted(entries, key=lambda e: str(e.get("ended", "")), reverse=True)[:keep]


def home_data(spawner: SlurmGPUSpawner) -> dict:
    """What the home page shows for the user of `spawner` (their unnamed session's); its first render and each
    refresh read the same.  `session`, `last_end` and `server_url` are the unnamed session's (the REST contract
    of one session per user); `sessions` has each of the user's sessions."""
    settings = spawner.settings
    spawners = [s for s in user_sessions(spawner.user) if is_portal_spawner(s)]
    entries = [session_entry(s) for s in spawners]
    return {
        **session_entry(spawner),
        "sessions": entries,
        "history": merged_history(user_record(spawner).history, settings.sessions.history),
        "presets": [p.model_dump() for p in settings.sessions.presets],
        "limits": {
            "max_per_user": settings.sessions.max_per_user,
            "max_gpus_per_user": settings.sessions.max_gpus_per_user,
            "max_kept_per_user": settings.sessions.max_kept_per_user,
            "name_pattern": NAME_PATTERN,
            "name_rule": NAME_RULE,
        },
    }


class HomePage:
    """What templates/home.html reads of `dsportal_home`: calling it gives the page's data (None for a hub
    whose sessions are not the portal's), `script` the page script's URL under the hub's base URL."""

    def __init__(self, user):
        self.user = user

    def __call__(self) -> dict | None:
        spawner = portal_spawner(self.user)
        return home_data(spawner) if spawner is not None else None

    @property
    def script(self) -> str:
        return script_path()


def home_template_var(user) -> HomePage:
    """`c.JupyterHub.template_vars["dsportal_home"]`: JupyterHub calls this for every page it renders;
    the page that shows the data (templates/home.html) calls what it returns, so other pages cost nothing."""
    return HomePage(user)


def hub_cards(spawners: list[SlurmGPUSpawner]) -> list[dict]:
    """The card of every portal session of these (for /hub/metrics, spawner/hub/base/metrics.py)."""
    return [card(spawner) for spawner in spawners if spawner.job_id]

"""Idle sessions give their GPUs back: the hub's jupyterhub-idle-culler services and who each may stop (hub side).

jupyterhub-idle-culler has one timeout per process and no notion of
partitions or exemptions.  So the portal runs one culler per distinct
timeout (sessions.idle_timeout and sessions.idle_timeout_by_partition), each
a JupyterHub-managed service whose role reaches only the users of its
JupyterHub group (`dsportal-idle-<seconds>`): it can list, read the activity
of, and stop those users' servers, nothing else.  At each start the spawner
puts its user into the group of the session's timeout (or none: exempt
groups, timeout 0).  A user whose sessions have different timeouts is in
several groups, so each culler sees sessions that are not its own: it passes
over those by their partition (spawner/hub/session/culler.py, through the
library's cull_arbiter_hook), and the hub refuses it the stop of one anyway
(spawner/hub/session/handlers.py).  A session's "last activity" is what the session itself
reports (spawner/jupyter/session/activity.py), every sessions.activity_seconds.
"""

from __future__ import annotations

from datetime import datetime

from portal.settings import SessionSettings

from ..request.resources import duration_words
from .progress import clock

GROUP_PREFIX = "dsportal-idle-"
SERVICE_PREFIX = "dsportal-idle-culler-"
CULLER_SCOPES = ("list:users", "read:users:activity", "read:servers", "delete:servers")


def timeout_for(partition: str, user_groups: list[str] | set[str], sessions: SessionSettings) -> int:
    """The session's idle timeout in seconds; 0 = never stopped for being idle."""
    if set(user_groups) & set(sessions.idle_exempt_groups):
        return 0
    return sessions.idle_timeout_by_partition.get(partition, sessions.idle_timeout)


def group_for(timeout: int) -> str | None:
    return f"{GROUP_PREFIX}{timeout}" if timeout else None


def timeouts(sessions: SessionSettings) -> list[int]:
    return sorted({t for t in (sessions.idle_timeout, *sessions.idle_timeout_by_partition.values()) if t})


def partitions_of(timeout: int, partitions: list[str], sessions: SessionSettings) -> list[str]:
    """The partitions whose sessions have idle timeout `timeout` (for users of no exempt group)."""
    return [p for p in partitions if sessions.idle_timeout_by_partition.get(p, sessions.idle_timeout) == timeout]


def session_partition(user_options: object, default_partition: str) -> str:
    """The partition a session asked for, from its saved options as JupyterHub's API shows them (a form's field
    may come as a list of one); its default when it named none."""
    value = user_options.get("partition") if isinstance(user_options, dict) else None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, str) and value else default_partition


def culler_services(
    sessions: SessionSettings, python: str, partitions: list[str], default_partition: str
) -> tuple[list[dict], list[dict]]:
    """JupyterHub's `services` and `load_roles` entries: one culler per timeout, reaching its group only, and
    told the partitions whose sessions are its own."""
    services, roles = [], []
    for timeout in timeouts(sessions):
        name, group = f"{SERVICE_PREFIX}{timeout}", group_for(timeout)
        own = [f"--partitions={p}" for p in partitions_of(timeout, partitions, sessions)]
        services.append(
            {
                "name": name,
                "command": [
                    python,
                    "-m",
                    "spawner.hub.base.childguard",  # ends with the hub, even a killed one
                    python,
                    "-m",
                    "spawner.hub.session.culler",
                    f"--timeout={timeout}",
                    f"--cull-every={sessions.cull_every}",
                    *own,
                    f"--default-partition={default_partition}",
                ],
            }
        )
        roles.append(
            {
                "name": name,
                "description": f"Stops servers of {group} idle for {timeout} s",
                "scopes": [f"{scope}!group={group}" for scope in CULLER_SCOPES],
                "services": [name],
            }
        )
    return services, roles


def is_culler(name: str) -> bool:
    return name.startswith(SERVICE_PREFIX)


def join_idle_groups(user, timeouts: list[int]) -> None:
    """Put the JupyterHub `user` into the group of each culler that may stop one of their sessions, and no other.

    A user whose sessions have different timeouts is in several groups; each
    culler then stops only the sessions of its own timeout (spawner/hub/session/handlers.py).
    """
    from jupyterhub import orm  # the hub's database model: loaded only inside the hub

    orm_user = getattr(user, "orm_user", None)
    if orm_user is None:
        return  # not in a hub (the spawner's own tests)
    db = user.db
    wanted = {group_for(t) for t in timeouts} - {None}
    for group in list(orm_user.groups):
        if group.name.startswith(GROUP_PREFIX) and group.name not in wanted:
            orm_user.groups.remove(group)
    for name in sorted(wanted - {g.name for g in orm_user.groups}):
        group = orm.Group.find(db, name)
        if group is None:
            group = orm.Group(name=name)
            db.add(group)
        orm_user.groups.append(group)
    db.commit()


def culler_timeout(service_name: str) -> int:
    """The idle timeout (seconds) of the portal's culler service `service_name`; 0 for any other service."""
    rest = service_name.removeprefix(SERVICE_PREFIX)
    return int(rest) if service_name.startswith(SERVICE_PREFIX) and rest.isdigit() else 0


def idle_words(last_activity: datetime | None, now: datetime, utcnow: datetime) -> str:
    """Why an idle culler stopped the session, and when (`last_activity` in UTC, as JupyterHub keeps it)."""
    idle = ""
    if last_activity is not None:
        seconds = max(1, int((utcnow - last_activity).total_seconds()))
        # under a minute in seconds (a site's short idle timeout), never rounded up to a minute it did not last
        idle = f" for {seconds} s" if seconds < 60 else f" for {duration_words(seconds // 60)}"
    return (
        f"Your session was stopped {clock(now, now)} because nothing used it{idle} (no busy kernel, "
        "terminal, mouse or keys in JupyterLab, or GPU work): its GPUs went back to the cluster."
    )

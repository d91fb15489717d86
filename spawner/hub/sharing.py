"""Sharing a running session: the portal's rules over JupyterHub's shares, and their upkeep (hub side).

A share is JupyterHub's own (`orm.Share`: the guest gets `access:servers` on
that one server and nothing else).  The portal adds:

- the admin's switch and groups (`sharing.*`), checked before anything is granted
  (`check_rules`, pure with the directory lookup passed in);
- an expiry the owner picks (`orm.Share.expires_at`, up to `sharing.max_hours`),
  ended by `expire_shares` every EXPIRE_SECONDS;
- a share of a directory group, as a JupyterHub group of that name whose members
  are the hub's users in the directory group (kept in step every GROUP_SECONDS);
- the end of a session ends its shares (`end_shares`, from the spawner's clear_state).

The API is spawner/hub/shareapi.py; the session cuts a guest off once the hub
stops letting them in, open connections included (spawner/jupyter/guests.py).
"""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import pwd
from datetime import UTC, datetime

from jupyterhub import orm

from portal.settings import SharingSettings, is_username

EXPIRE_SECONDS = 2.0  # how often expired shares are ended
GROUP_SECONDS = 60.0  # how often shared groups' members are brought in step with the directory

log = logging.getLogger("JupyterHub").getChild("shares")

WARNING = (
    "People you share with run code as you, in your files: they can read, change and delete anything you can, "
    "and their jobs run as you. Share only with people you trust, and only for as long as you need."
)


class ShareRefused(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # JupyterHub's database keeps naive UTC


def parse_share(body: object, rules: SharingSettings) -> tuple[str, str, str, float]:
    """The request body -> (server, "user" or "group", name, hours); ShareRefused with words (pure)."""
    if not isinstance(body, dict) or not set(body) <= {"server", "user", "group", "hours"}:
        raise ShareRefused('Send {"server": NAME, "user": USER or "group": GROUP, "hours": H}.')
    server = body.get("server", "")
    if not isinstance(server, str):
        raise ShareRefused("server must be the session's name (empty for the unnamed session).")
    kinds = [k for k in ("user", "group") if body.get(k) not in (None, "")]
    if len(kinds) != 1:
        raise ShareRefused("Share with one user or one group: give either user or group.")
    kind = kinds[0]
    name = body[kind]
    if not isinstance(name, str) or not is_username(name):
        raise ShareRefused(f"{name!r} is not a {kind} name: letters, digits, _ . - only.")
    hours = body.get("hours", min(8.0, rules.max_hours))
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= rules.max_hours:
        raise ShareRefused(f"hours must be a number above 0 and at most {rules.max_hours:g} (sharing.max_hours).")
    return server, kind, name, float(hours)


def unix_groups(name: str) -> set[str]:
    """The directory groups of account `name` (empty when there is no such account)."""
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        return set()
    names = set()
    for gid in os.getgrouplist(name, account.pw_gid):
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return names


def check_rules(rules: SharingSettings, owner: str, kind: str, name: str, groups_of=unix_groups) -> None:
    """The admin's rules for `owner` sharing with a user or group `name`; ShareRefused with words."""
    if not rules.enabled:
        raise ShareRefused("Sharing sessions is turned off on this portal.", 403)
    allowed = set(rules.groups)
    mine = groups_of(owner)
    if allowed and not mine & allowed:
        raise ShareRefused(
            f"Only members of {', '.join(sorted(allowed))} may share sessions here (sharing.groups).", 403
        )
    if kind == "user":
        if name == owner:
            raise ShareRefused("This is your own session: you need no share to use it.")
        if allowed and not groups_of(name) & allowed:
            raise ShareRefused(
                f"{name} is not in {', '.join(sorted(allowed))}, the groups sessions may be shared with here."
            )
    elif allowed and name not in allowed:
        raise ShareRefused(f"Sessions may be shared only with the groups {', '.join(sorted(allowed))} here.")
    elif not allowed and name not in mine:
        raise ShareRefused(f"You can share only with a group you are in; you are not in {name!r}.")


def share_model(share: orm.Share, now: datetime) -> dict:
    kind = "user" if share.user is not None else "group"
    target = share.user if share.user is not None else share.group
    return {
        "server": share.spawner.name,
        kind: target.name,
        "kind": kind,
        "name": target.name,
        "created": share.created_at.isoformat(timespec="seconds") + "Z" if share.created_at else "",
        "expires": share.expires_at.isoformat(timespec="seconds") + "Z" if share.expires_at else "",
        "seconds_left": max(0, int((share.expires_at - now).total_seconds())) if share.expires_at else None,
    }


def group_members(group: str, hub_users: list[str], groups_of=unix_groups) -> set[str]:
    """The hub's users who are in directory group `group`."""
    return {name for name in hub_users if group in groups_of(name)}


async def sync_group(db, group_name: str) -> orm.Group:
    """The JupyterHub group `group_name`, created if need be, with the hub's users in that directory group.

    The directory is asked in a thread (NSS may ask LDAP); the database is changed on the hub's loop only."""
    users = {u.name: u for u in db.query(orm.User)}
    wanted = await asyncio.to_thread(group_members, group_name, list(users))
    group = orm.Group.find(db, group_name)
    if group is None:
        group = orm.Group(name=group_name)
        db.add(group)
    for user in list(group.users):
        if user.name not in wanted:
            group.users.remove(user)
    have = {u.name for u in group.users}
    for name in sorted(wanted - have):
        if name in users:
            group.users.append(users[name])
    db.commit()
    return group


def expired(share, now: datetime) -> bool:
    return share.expires_at is not None and share.expires_at <= now


def end_shares(db, orm_spawner) -> int:
    """End every share and share code of a session (it has ended); how many."""
    if orm_spawner is None or orm_spawner.id is None:
        return 0
    ended = db.query(orm.Share).filter_by(spawner_id=orm_spawner.id).delete()
    ended += db.query(orm.ShareCode).filter_by(spawner_id=orm_spawner.id).delete()
    db.commit()
    return ended


def expire_shares(db) -> int:
    """End the shares whose time is up; how many."""
    now = utcnow()
    expired = db.query(orm.Share).filter(orm.Share.expires_at != None, orm.Share.expires_at <= now).all()  # noqa: E711
    for share in expired:
        log.info("Share %s expired", share._log_name)
        db.delete(share)
    if expired:
        db.commit()
    return len(expired)


async def keep_shares(db_of, interval: float = EXPIRE_SECONDS) -> None:
    """End expired shares every `interval` s and keep shared groups in step every GROUP_SECONDS (the hub's loop)."""
    last_sync = 0.0
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(interval)
        db = db_of()
        if db is None:
            continue
        try:
            expire_shares(db)
            if loop.time() - last_sync >= GROUP_SECONDS:
                last_sync = loop.time()
                for (name,) in db.query(orm.Group.name).join(orm.Share, orm.Share.group_id == orm.Group.id).distinct():
                    await sync_group(db, name)
        except Exception:  # the loop must outlive one bad pass
            log.exception("Keeping shares failed")
            db.rollback()


_TASKS: list[asyncio.Task] = []


def hub_db():
    """The running hub's database session; None while the hub is still starting."""
    from jupyterhub.app import JupyterHub  # the running hub's application: there is one only inside the hub

    if not JupyterHub.initialized() or not JupyterHub.instance().tornado_settings:
        return None
    return getattr(JupyterHub.instance(), "db", None)


def start(loop: asyncio.AbstractEventLoop) -> None:
    """Keep shares from the hub's start on (once per process)."""
    if not _TASKS:
        _TASKS.append(loop.create_task(keep_shares(hub_db)))

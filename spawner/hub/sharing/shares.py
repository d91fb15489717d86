"""Sharing a running session: the portal's rules, the owner's choices and JupyterHub's shares (hub side).

Whom a session is shared with is the owner's choice, kept in the session's
record (`SessionRecord.shares`: a user or a directory group, each until a time
the owner picked, up to `sharing.max_hours`).  What JupyterHub enforces is
derived from it: one `orm.Share` (`access:servers` on that one server, nothing
else) for each user who should be in, the members of shared groups included.
`apply_shares` brings JupyterHub's shares in step with the choices: at each
change, every EXPIRE_SECONDS (a choice whose time is up ends) and every
GROUP_SECONDS for the groups' members (someone who left the directory group
is out).

Groups become user shares because JupyterHub 6.1 drops a group's share from
its members' tokens (`get_scopes_for` adds only `owner.shared_with_me` to a
token's owner scopes), so a group share would let no member's browser in.

The admin's switch and groups (`sharing.*`) are checked before anything is
granted (`check_rules`, pure with the directory lookup passed in); the end of a
session ends its shares (`end_shares` in spawner/hub/session/token.py, from the
spawner's clear_state: who may use a session ends with it).  The
API is spawner/hub/sharing/handlers.py; the session cuts a guest off once the hub
stops letting them in, open connections included (spawner/jupyter/sharing/guests.py).
When anyone's access ends, the session's token (which their code could read)
is replaced at once and handed to the session (spawner/hub/sharing/handover.py).
"""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import pwd
import time
from datetime import UTC, datetime, timedelta

from jupyterhub import orm
from sqlalchemy.orm import object_session

from portal.settings import SharingSettings, is_username

from ..base.logname import log_name
from .handover import replace_in_session

EXPIRE_SECONDS = 2.0  # how often shares whose time is up are ended
GROUP_SECONDS = 60.0  # how long a directory group's members are taken as known

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


def group_members(group: str, hub_users: list[str], groups_of=unix_groups) -> set[str]:
    """The hub's users who are in directory group `group`."""
    return {name for name in hub_users if group in groups_of(name)}


def iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds") + "Z"


def parse_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.removesuffix("Z"))
    except (TypeError, ValueError):
        return None


def live(choices: list[dict], now: datetime) -> list[dict]:
    """The owner's choices whose time is not up (pure)."""
    return [c for c in choices if (end := parse_iso(c.get("expires", ""))) is not None and end > now]


def chosen(choices: list[dict], kind: str, name: str, hours: float, now: datetime) -> list[dict]:
    """`choices` with `kind` `name` shared for `hours` from `now` (a choice of the same one is replaced; pure)."""
    rest = without(choices, kind, name)
    return [*rest, {"kind": kind, "name": name, "expires": iso(now + timedelta(hours=hours))}]


def without(choices: list[dict], kind: str, name: str) -> list[dict]:
    return [c for c in choices if (c.get("kind"), c.get("name")) != (kind, name)]


def wanted_users(choices: list[dict], members: dict[str, set[str]], owner: str) -> dict[str, str]:
    """Who should be let in, each until the latest of the choices that name them (ISO), never the owner (pure)."""
    until: dict[str, str] = {}
    for choice in choices:
        names = {choice["name"]} if choice.get("kind") == "user" else members.get(choice.get("name", ""), set())
        for name in names - {owner}:
            until[name] = max(until.get(name, ""), choice["expires"])
    return until


def choice_model(choice: dict, server: str, now: datetime) -> dict:
    end = parse_iso(choice["expires"])
    return {
        "server": server,
        "kind": choice["kind"],
        "name": choice["name"],
        choice["kind"]: choice["name"],
        "expires": choice["expires"],
        "seconds_left": max(0, int((end - now).total_seconds())) if end else 0,
    }


async def members_of(
    groups: set[str], hub_users, known: dict[str, tuple[float, set[str]]], fresh: bool = False
) -> dict[str, set[str]]:
    """The hub's users (`hub_users()`, asked only when a group is read) in each directory group, read in a
    thread (NSS may ask LDAP), kept GROUP_SECONDS in `known` (group -> (when read, the hub's users in it))."""
    now = time.monotonic()
    result = {}
    users: list[str] | None = None
    for group in sorted(groups):
        when, names = known.get(group, (-GROUP_SECONDS, set()))
        if fresh or now - when >= GROUP_SECONDS:
            users = hub_users() if users is None else users
            names = await asyncio.to_thread(group_members, group, users)
            known[group] = (now, names)
        result[group] = names
    return result


async def apply_shares(spawner, fresh_groups: bool = False) -> asyncio.Task | None:
    """Make JupyterHub's shares of `spawner`'s session what its owner chose (none while it is not running).
    When someone's access ended, the session's token is replaced at once: -> the new token's delivery to the
    session (a revoke's answer awaits it)."""
    orm_spawner = spawner.orm_spawner
    db = object_session(orm_spawner) if orm_spawner is not None else None
    if db is None:
        return None
    now = utcnow()
    # sharing turned off (or off for want of per-user origins, after an upgrade): the shares made before end
    allowed = spawner.settings.sharing.enabled
    choices = live(spawner.record.shares, now) if spawner.ready and allowed else []
    if choices != spawner.record.shares and spawner.ready:
        for gone in [c for c in spawner.record.shares if c not in choices]:
            log.info(
                "%s's share of %s with %s %s has %s",
                spawner.user.name,
                log_name(spawner),
                gone.get("kind"),
                gone.get("name"),
                "expired" if allowed else "ended: sharing is off on this portal (sharing.enabled)",
            )
        spawner.record.shares = choices
        spawner.save_state()
    groups = {c["name"] for c in choices if c["kind"] == "group"}
    known = spawner.services.shared(("directory group members",), dict)  # one for the hub, kept by its services
    members = await members_of(groups, lambda: [name for (name,) in db.query(orm.User.name)], known, fresh_groups)
    wanted = wanted_users(choices, members, spawner.user.name)
    existing = {share.user.name: share for share in list(orm_spawner.shares) if share.user is not None}
    changed = ended = False
    for share in list(orm_spawner.shares):
        if share.user is None or share.user.name not in wanted:  # a group's share, or one no choice names now
            db.delete(share)
            changed = ended = True
    users = {u.name: u for u in db.query(orm.User).filter(orm.User.name.in_(list(wanted)))} if wanted else {}
    for name, until in wanted.items():
        if name not in users:
            continue  # not a portal user (yet): their share comes at the first pass after they log in
        share = existing.get(name) or orm.Share.grant(db, orm_spawner, users[name])
        if share.expires_at != parse_iso(until):
            share.expires_at = parse_iso(until)
            changed = True
    if changed:
        db.commit()
    if not ended:
        return None
    # Whoever was let in could read the session's token (their code ran as the owner): it is replaced, the old
    # one dead before this returns, and the new one handed to the session (handover.py).
    return replace_in_session(spawner)


async def keep_shares(spawners, interval: float = EXPIRE_SECONDS) -> None:
    """Every `interval` s: each running session's shares in step with its owner's choices (the hub's loop)."""
    while True:
        await asyncio.sleep(interval)
        for spawner in spawners():
            if not spawner.record.shares:  # no choice, no share: a session's end and a revoke end them at once
                continue
            try:
                await apply_shares(spawner)
            except Exception:  # the loop must outlive one bad pass
                log.exception("Keeping the shares of %s failed", log_name(spawner))
                db = object_session(spawner.orm_spawner)
                if db is not None:
                    db.rollback()

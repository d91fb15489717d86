"""The admin YAML's section sharing: a running session shared with colleagues."""

from __future__ import annotations

from .kinds import Flag, GroupName, integer, number
from .section import Section, key


class SharingSettings(Section):
    """Users share a running session with a colleague (JupyterHub's shares): both work in it at once."""

    enabled: Flag = key(
        True,
        "Users may share a running session with another user or a group from the home page. The people they share "
        "with run code as the owner, in the owner's files; the page says so. Sharing needs per-user origins: "
        "without hub.subdomain_host it is off (a page of the owner's session on the hub's own origin could act "
        "as the guest's hub account) and true is an error.",
    )
    groups: list[GroupName] = key(
        [],
        "Only members of these groups may share and be shared with, and only these groups may be shared with; "
        "empty = every portal user and any of the sharer's own groups.",
    )
    codes: Flag = key(
        False,
        "Also allow share codes (JupyterHub's links that let anyone logged in who has the link join); false = "
        "sessions are shared only with named users and groups.",
    )
    max_hours: number(0.1, 8760) = key(
        24, "Longest a share may last, in hours; each share ends by itself at the time its owner chose."
    )
    check_seconds: integer(1, 60) = key(
        3,
        "Seconds between a session's checks that its guests may still be there: a guest whose share was revoked "
        "or expired is refused and their open connections closed within about this long.",
    )

"""The dev cluster's demo people and groups, declared once.

The unix accounts (machine.py), the demo directory (directory.py), the
logins `up` prints and the tests' passwords (tests/support/demo.py) all come
from here.  deploy/portal.dev.yaml cannot import it: tests/unit/test_devcluster.py
checks that its admin groups make exactly the admins declared here.
"""

from __future__ import annotations

from dataclasses import dataclass

# the demo people's mail domain: the dev cluster's exim delivers it to /var/mail/USER (deploy/dev/mail.py)
MAIL_DOMAIN = "dsportal.test"


@dataclass(frozen=True)
class DemoGroup:
    name: str
    gid: int | None = None  # a posixGroup, also a unix group of the machine; None: a groupOfNames, directory only


@dataclass(frozen=True)
class DemoUser:
    name: str
    password: str
    uid: int  # also the gid of the user's private unix group
    groups: tuple[str, ...]
    admin: bool = False  # a member of an admin group of deploy/portal.dev.yaml

    @property
    def mail(self) -> str:
        """The address in the directory's `mail` attribute."""
        return f"{self.name}@{MAIL_DOMAIN}"


GROUPS = (
    DemoGroup("datasci", 5000),  # the portal's users (ldap.allowed_groups, slurm.user_groups)
    DemoGroup("hpcadmin", 5100),  # the portal's admins (hub.admin_groups)
    DemoGroup("mlteam"),
    DemoGroup("webadmins"),  # an admin group in the LDAP tests (groupOfNames), not in the dev cluster
)

PEOPLE = (  # the people the README, the tests and `up` name
    DemoUser("alice", "alice-pw", 5001, ("datasci", "mlteam")),
    DemoUser("bob", "bob-pw", 5002, ("datasci", "webadmins")),
    DemoUser("carol", "carol-pw", 5003, ("datasci", "hpcadmin"), admin=True),
    # a plain user beside carol, the admin: JupyterHub's admins may enter every session, so the sharing tests'
    # outsider who never gets into a session is dave
    DemoUser("dave", "dave-pw", 5004, ("datasci",)),
)
# the side lane's people (tests/support/lanes.py): plain portal users whom only the long, mostly waiting tests act
# as (a session's real time limit, the idle timeouts, the sweeps), so that `deploy/devcluster test` runs those
# beside the others without either side stopping or counting the other's sessions
SIDE_PEOPLE = (
    DemoUser("erin", "erin-pw", 5005, ("datasci",)),
    DemoUser("frank", "frank-pw", 5006, ("datasci",)),
    DemoUser("grace", "grace-pw", 5007, ("datasci",)),
)
# the soak's simulated users (tests/soak, `deploy/devcluster soak`): plain portal users, each with a private
# group; their own uids (5201...), so a soak never starts or stops a session of the people above
SOAK_COUNT = 24
SOAK_USERS = tuple(
    DemoUser(f"soak{n:02d}", f"soak{n:02d}-pw", 5200 + n, ("datasci",)) for n in range(1, SOAK_COUNT + 1)
)
USERS = PEOPLE + SIDE_PEOPLE + SOAK_USERS


def user(name: str) -> DemoUser:
    """The demo user `name` (KeyError if there is none)."""
    for u in USERS:
        if u.name == name:
            return u
    named = ", ".join(u.name for u in PEOPLE + SIDE_PEOPLE)
    raise KeyError(f"no demo user {name!r}; the demo users are {named}, {soak_range()}")


def members(group: str) -> list[str]:
    """The demo users in `group`, in declaration order."""
    return [u.name for u in USERS if group in u.groups]


def unix_groups() -> dict[str, int]:
    """The groups the machine has too (the posixGroups): name -> gid."""
    return {g.name: g.gid for g in GROUPS if g.gid is not None}


def soak_range() -> str:
    """The soak's users in short: "soak01..soak24"."""
    return f"{SOAK_USERS[0].name}..{SOAK_USERS[-1].name}"


def logins() -> str:
    """The logins as `up` prints them: "alice / alice-pw, bob / bob-pw, carol / carol-pw, dave / dave-pw (carol is
    an admin); the tests' side lane erin, frank, grace / NAME-pw; the soak's soak01..soak24 / soakNN-pw"."""
    said = ", ".join(f"{u.name} / {u.password}" for u in PEOPLE)
    admins = [u.name for u in PEOPLE if u.admin]
    if admins:
        said += f" ({' and '.join(admins)} {'is an admin' if len(admins) == 1 else 'are admins'})"
    side = ", ".join(u.name for u in SIDE_PEOPLE)
    return f"{said}; the tests' side lane {side} / NAME-pw; the soak's {soak_range()} / soakNN-pw"


def summary() -> str:
    """Who and which groups, for progress messages: "alice, ..., grace, soak01..soak24; groups datasci,
    hpcadmin, mlteam, webadmins"."""
    people = ", ".join(u.name for u in PEOPLE + SIDE_PEOPLE)
    return f"{people}, {soak_range()}; groups {', '.join(g.name for g in GROUPS)}"

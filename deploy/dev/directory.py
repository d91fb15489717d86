"""A small OpenLDAP directory for the dev cluster and the tests.

Writes a slapd.conf and the demo entries into a folder and loads them with
slapadd; `slapd_argv` runs Debian's slapd on it in the foreground, so its
owner (supervisord in the dev cluster, the `a_slapd` fixture in the tests)
holds the process itself instead of a pid file.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import demo

SUFFIX = "dc=dsportal,dc=test"
ROOT_DN = f"cn=admin,{SUFFIX}"
SERVICE_DN = f"cn=portal,ou=services,{SUFFIX}"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
SLAPPASSWD = "/usr/sbin/slappasswd"


@dataclass
class Person:
    uid: str
    password: str
    uid_number: int
    gid_number: int = 5000
    home: str = ""
    mail: str = ""  # the `mail` attribute (inetOrgPerson); none if empty

    def __post_init__(self):
        self.home = self.home or f"/home/{self.uid}"


@dataclass
class Group:
    cn: str
    members: list[str]
    style: str = "posixGroup"  # or "groupOfNames"
    gid_number: int = 0


def demo_people() -> list[Person]:
    """The demo users of deploy/dev/demo.py as directory entries."""
    return [Person(u.name, u.password, u.uid, mail=u.mail) for u in demo.USERS]


def demo_groups() -> list[Group]:
    """Each demo group: a posixGroup where it has a gid, else a groupOfNames."""
    return [
        Group(g.name, demo.members(g.name), "posixGroup" if g.gid is not None else "groupOfNames", g.gid or 0)
        for g in demo.GROUPS
    ]


@dataclass
class Directory:
    people: list[Person] = field(default_factory=demo_people)
    groups: list[Group] = field(default_factory=demo_groups)
    service_password: str = "portal-service-pw"
    root_password: str = "directory-root-pw"


def hashed(password: str) -> str:
    out = subprocess.run(
        [SLAPPASSWD, "-h", "{SSHA}", "-s", password], capture_output=True, text=True, timeout=30, check=True
    )
    return out.stdout.strip()


def slapd_conf(folder: Path, root_hash: str) -> str:
    return f"""\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
disallow bind_anon
require authc
database mdb
maxsize 67108864
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {root_hash}
directory {folder}/data
index objectClass,uid,memberUid,member eq
access to attrs=userPassword by self write by anonymous auth by * none
access to * by dn.exact="{SERVICE_DN}" read by self read by users read by * none
"""


def person_entry(p: Person, password_hash: str) -> str:
    """One person's LDIF entry (no trailing newline)."""
    mail = f"mail: {p.mail}\n" if p.mail else ""
    return (
        f"dn: uid={p.uid},{PEOPLE}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n"
        f"uid: {p.uid}\ncn: {p.uid.title()}\nsn: {p.uid.title()}\nuidNumber: {p.uid_number}\n"
        f"gidNumber: {p.gid_number}\nhomeDirectory: {p.home}\nloginShell: /bin/bash\n{mail}"
        f"userPassword: {password_hash}"
    )


def entries(d: Directory) -> str:
    blocks = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: dsportal\no: DS Portal dev cluster",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people",
        f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups",
        f"dn: ou=services,{SUFFIX}\nobjectClass: organizationalUnit\nou: services",
        f"dn: {SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: portal\n"
        f"userPassword: {hashed(d.service_password)}",
    ]
    for p in d.people:
        blocks.append(person_entry(p, hashed(p.password)))
    for g in d.groups:
        if g.style == "posixGroup":
            members = "".join(f"\nmemberUid: {m}" for m in g.members)
            blocks.append(
                f"dn: cn={g.cn},{GROUPS}\nobjectClass: posixGroup\ncn: {g.cn}\ngidNumber: {g.gid_number}{members}"
            )
        else:
            members = "".join(f"\nmember: uid={m},{PEOPLE}" for m in g.members)
            blocks.append(f"dn: cn={g.cn},{GROUPS}\nobjectClass: groupOfNames\ncn: {g.cn}{members}")
    return "\n\n".join(blocks) + "\n"


def build(folder: Path, directory: Directory | None = None) -> None:
    """Write slapd.conf and load the entries (slapd must not be running on `folder`)."""
    d = directory or Directory()
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    if data.exists():
        for f in data.iterdir():
            f.unlink()
    data.mkdir(exist_ok=True)
    folder.chmod(0o700)
    # every file holds a password or a password's hash: private from the start (created 0600, never wider)
    for name, text in (
        ("slapd.conf", slapd_conf(folder, hashed(d.root_password))),
        ("entries.ldif", entries(d)),
        ("service.pw", d.service_password),
        ("root.pw", d.root_password),
    ):
        (folder / name).unlink(missing_ok=True)
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    subprocess.run(
        [SLAPADD, "-q", "-f", str(folder / "slapd.conf"), "-l", str(folder / "entries.ldif")],
        check=True,
        capture_output=True,
        timeout=60,
    )


def slapd_argv(folder: Path, uri: str) -> list[str]:
    """slapd on `uri` (e.g. ldap://127.0.0.1:3389/), in the foreground (-d 0: no fork, no debug output)."""
    return [SLAPD, "-d", "0", "-f", str(folder / "slapd.conf"), "-h", uri]


def modify(folder: Path, uri: str, ldif: str) -> None:
    """Change the directory as its root DN (the password from a file, never the command line)."""
    subprocess.run(
        ["ldapmodify", "-x", "-H", uri, "-D", ROOT_DN, "-y", str(folder / "root.pw")],
        input=ldif,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )


def people_without_mail(folder: Path, uri: str) -> list[str]:
    """The uids of the people with no `mail` attribute (read as the root DN)."""
    out = subprocess.run(
        ["ldapsearch", "-x", "-LLL", "-H", uri, "-D", ROOT_DN, "-y", str(folder / "root.pw"), "-b", PEOPLE]
        + ["(&(objectClass=inetOrgPerson)(!(mail=*)))", "uid"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [line.split(":", 1)[1].strip() for line in out.stdout.splitlines() if line.startswith("uid:")]


def add_mail_ldif(uid: str, mail: str) -> str:
    return f"dn: uid={uid},{PEOPLE}\nchangetype: modify\nadd: mail\nmail: {mail}\n"


def set_member(folder: Path, uri: str, group: str, uid: str, member: bool) -> None:
    """Add `uid` to (or remove it from) the posixGroup `group`."""
    change = "add" if member else "delete"
    modify(folder, uri, f"dn: cn={group},{GROUPS}\nchangetype: modify\n{change}: memberUid\nmemberUid: {uid}\n")


def answers(folder: Path, uri: str) -> bool:
    """The service account can bind: slapd is up and holds the directory."""
    probe = subprocess.run(
        ["ldapwhoami", "-x", "-H", uri, "-D", SERVICE_DN, "-y", str(folder / "service.pw")],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return probe.returncode == 0

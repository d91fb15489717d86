"""Every LDAP call the portal makes, in one place (ldap3, synchronous).

`Directory.authenticate` binds as the user (bind-DN template, or
search-then-bind with a service account), reads the account's posix
attributes and its groups (posixGroup memberUid and groupOfNames member).
It is blocking by design: the authenticator runs it in a worker thread, and
ldap3's connect and receive timeouts bound how long it can take.

Every value placed in a DN or a filter is escaped here, even though the
authenticator has already checked usernames against a strict pattern.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import ssl
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import ldap3
from ldap3.core import exceptions as ldap_errors
from ldap3.utils.conv import escape_filter_chars
from ldap3.utils.dn import escape_rdn

from .settings import LdapSettings

log = logging.getLogger("dsportal.ldap")


class DirectoryUnavailable(RuntimeError):
    """No directory server answered (refused, unreachable or hung)."""


class DirectoryRefused(RuntimeError):
    """A server answered with a refusal the portal cannot work around (no failover: others answer the same).

    E.g. the service account's password refused, a search the server will not do.
    """


# LDAP result codes that mean "this server cannot serve now": try the next one.
_BUSY = {51: "busy", 52: "unavailable"}


@dataclass(frozen=True)
class DirectoryUser:
    username: str
    dn: str
    uid_number: int | None = None
    gid_number: int | None = None
    home: str = ""
    groups: tuple[str, ...] = field(default=())
    locked: bool = False  # ppolicy's pwdAccountLockedTime, or shadowExpire passed
    mail: str = ""  # the directory's e-mail address (ldap.mail_attribute), "" when it has none

    def auth_state(self) -> dict:
        return {
            "uid": self.username,
            "dn": self.dn,
            "uidNumber": self.uid_number,
            "gidNumber": self.gid_number,
            "home": self.home,
            "groups": list(self.groups),
            "mail": self.mail,
        }


# Failures that mean "this server is not answering", so the next URI is tried.
_UNREACHABLE = (
    ldap_errors.LDAPSocketOpenError,
    ldap_errors.LDAPSocketReceiveError,
    ldap_errors.LDAPSocketSendError,
    ldap_errors.LDAPSessionTerminatedByServerError,
    ldap_errors.LDAPResponseTimeoutError,
    ldap_errors.LDAPStartTLSError,
    ldap_errors.LDAPCommunicationError,
)


def user_filter(attribute: str, username: str) -> str:
    return f"({attribute}={escape_filter_chars(username)})"


def group_filter(username: str, dn: str) -> str:
    return (
        f"(|(&(objectClass=posixGroup)(memberUid={escape_filter_chars(username)}))"
        f"(&(objectClass=groupOfNames)(member={escape_filter_chars(dn)})))"
    )


def bind_dn(template: str, username: str) -> str:
    return template.replace("{username}", escape_rdn(username))


def is_loopback(uri: str) -> bool:
    """The URL's host is this machine (localhost or a loopback address)."""
    host = (urlparse(uri).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def transport(setting: str, uri: str) -> str:
    """How a server is spoken to: "plain", "starttls" or "ldaps" (setting "auto" picks by the URI)."""
    if setting != "auto":
        return setting
    if uri.startswith("ldaps://"):
        return "ldaps"
    return "plain" if is_loopback(uri) else "starttls"


def plain_remote_uris(settings: LdapSettings) -> list[str]:
    """Servers to which passwords would travel in clear text over a network (none when the portal's login is off)."""
    if not settings.enabled:
        return []
    return [u for u in settings.uris if transport(settings.tls, u) == "plain" and not is_loopback(u)]


def _raise_refusal(what: str, result: dict):
    """A server's error answer: busy or unavailable means try the next server; anything else is a refusal."""
    code = result.get("result")
    if code in _BUSY:
        raise ldap_errors.LDAPCommunicationError(f"{what}: the server is {_BUSY[code]}")
    raise DirectoryRefused(f"{what} refused: {result.get('description', code)} {result.get('message', '')}".strip())


def is_locked(locked_time, shadow_expire: int | None, today: int | None = None) -> bool:
    """ppolicy's lock, or a shadowExpire (days since 1970) that has passed."""
    if locked_time:
        return True
    if shadow_expire is None or shadow_expire < 0:
        return False
    return shadow_expire <= (today if today is not None else int(time.time() // 86400))


def _first(entry, name: str):
    values = entry["attributes"].get(name)
    if isinstance(values, list):
        return values[0] if values else None
    return values


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Directory:
    def __init__(self, settings: LdapSettings):
        self.s = settings

    def _server(self, uri: str) -> ldap3.Server:
        mode = transport(self.s.tls, uri)
        tls = None
        if mode in ("starttls", "ldaps"):
            tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=self.s.ca_file or None)
        server = ldap3.Server(
            uri, use_ssl=mode == "ldaps", tls=tls, get_info=ldap3.NONE, connect_timeout=self.s.connect_timeout
        )
        server.dsportal_starttls = mode == "starttls"
        return server

    def _connect(
        self, server: ldap3.Server, user: str, password: str, absent_is_refusal: bool = False
    ) -> ldap3.Connection | None:
        """An open, bound connection, or None when the credentials are refused (`absent_is_refusal`: also when the
        DN does not exist here, noSuchObject or a referral: one bind template of several); closed on every other
        way out."""
        conn = ldap3.Connection(
            server,
            user=user,
            password=password,
            authentication=ldap3.SIMPLE,
            receive_timeout=math.ceil(self.s.response_timeout),  # ldap3 packs it as an integer
            read_only=True,
            raise_exceptions=False,
            auto_referrals=False,
        )
        try:
            conn.open()
            if server.dsportal_starttls and not conn.start_tls():
                raise ldap_errors.LDAPStartTLSError(f"StartTLS refused: {conn.result}")
            if conn.bind():
                return conn
        except BaseException:
            conn.unbind()
            raise
        result = conn.result or {}
        conn.unbind()
        if result.get("result") == 49 or (absent_is_refusal and result.get("result") in (10, 32)):
            return None  # invalidCredentials; referral, noSuchObject
        _raise_refusal("bind", result)

    def _service_bind(self, server: ldap3.Server) -> ldap3.Connection:
        reader = self._connect(server, self.s.service_dn, self._service_password())
        if reader is None:
            raise DirectoryRefused(
                "the service account's password was refused; check ldap.service_dn and ldap.service_password_file"
            )
        return reader

    def _service_password(self) -> str:
        return Path(self.s.service_password_file).read_text().rstrip("\n")

    def _on_each_server(self, call):
        """call(server) on the first server that answers (failover); DirectoryUnavailable if none does."""
        problems = []
        for uri in self.s.uris:
            try:
                return call(self._server(uri))
            except _UNREACHABLE as e:
                log.warning("Directory server %s is not answering: %s", uri, type(e).__name__)
                problems.append(f"{uri}: {type(e).__name__}")
        raise DirectoryUnavailable("; ".join(problems))

    def authenticate(self, username: str, password: str) -> DirectoryUser | None:
        """The user, or None (wrong password, unknown user); DirectoryUnavailable if no server answers."""
        return self._on_each_server(lambda server: self._authenticate_on(server, username, password))

    def lookup(self, username: str, known_dn: str = "") -> DirectoryUser | None:
        """The account as the directory has it now, read with the service account (None: it is gone).

        For the periodic refresh of a logged-in user: no password is at hand, so
        this needs ldap.service_dn.  `known_dn`: the entry the user's login bound
        as; with bind templates, that entry is read again (the same uid may be in
        two branches, two people), when it is one of the templates'.
        """
        return self._on_each_server(lambda server: self._lookup_on(server, username, known_dn))

    def _lookup_on(self, server: ldap3.Server, username: str, known_dn: str = "") -> DirectoryUser | None:
        reader = self._service_bind(server)
        try:
            templates = self.s.bind_dn_template
            if not templates:
                dn = self._find_dn(reader, username)
                return None if dn is None else self._read_user(reader, username, dn)
            candidates = [bind_dn(template, username) for template in templates]
            if known_dn in candidates:  # the entry this person logged in as, and no other's
                return self._read_user(reader, username, known_dn)
            for dn in candidates:  # no login's entry at hand: the first that exists, in the templates' order
                found = self._read_user(reader, username, dn)
                if found is not None:
                    return found
            return None
        finally:
            reader.unbind()

    def _authenticate_on(self, server: ldap3.Server, username: str, password: str) -> DirectoryUser | None:
        with ExitStack() as opened:  # every connection is closed, whichever way this ends
            templates = self.s.bind_dn_template
            if templates:
                # each template's DN in order, as jupyterhub-ldapauthenticator tries them: the first that binds
                for dn in (bind_dn(template, username) for template in templates):
                    conn = self._connect(server, dn, password, absent_is_refusal=len(templates) > 1)
                    if conn is not None:
                        opened.callback(conn.unbind)
                        return self._read_user(conn, username, dn)
                return None
            reader = self._service_bind(server)
            opened.callback(reader.unbind)
            dn = self._find_dn(reader, username)
            if dn is None:
                return None
            conn = self._connect(server, dn, password)
            if conn is None:
                return None
            opened.callback(conn.unbind)
            return self._read_user(reader, username, dn)

    def _search(
        self, conn: ldap3.Connection, base: str, flt: str, attributes: list[str], scope=ldap3.SUBTREE
    ) -> list[dict]:
        if not conn.search(
            base, flt, search_scope=scope, attributes=attributes, time_limit=int(self.s.response_timeout) or 1
        ):
            result = conn.result or {}
            if result.get("result") in (0, 32):  # success, noSuchObject
                return []
            _raise_refusal("search", result)
        return [e for e in conn.response if e.get("type") == "searchResEntry"]

    def _find_dn(self, conn: ldap3.Connection, username: str) -> str | None:
        found = self._search(conn, self.s.user_search_base, user_filter(self.s.username_attribute, username), ["1.1"])
        if len(found) != 1:
            if found:
                log.warning("%d directory entries match one username; refusing the login", len(found))
            return None
        return found[0]["dn"]

    def _read_user(self, conn: ldap3.Connection, username: str, dn: str) -> DirectoryUser | None:
        attrs = [
            "uidNumber",
            "gidNumber",
            "homeDirectory",
            "shadowExpire",
            "pwdAccountLockedTime",
            self.s.mail_attribute,
        ]
        entries = self._search(conn, dn, "(objectClass=*)", attrs, scope=ldap3.BASE)
        if not entries:
            return None  # bound as it a moment ago, or looked up: gone now
        entry = entries[0]
        groups: tuple[str, ...] = ()
        if self.s.group_search_base:
            found = self._search(conn, self.s.group_search_base, group_filter(username, dn), ["cn"])
            groups = tuple(sorted({str(_first(g, "cn")) for g in found if _first(g, "cn")}))
        return DirectoryUser(
            username=username,
            dn=dn,
            uid_number=_int(_first(entry, "uidNumber")),
            gid_number=_int(_first(entry, "gidNumber")),
            home=str(_first(entry, "homeDirectory") or ""),
            groups=groups,
            locked=is_locked(_first(entry, "pwdAccountLockedTime"), _int(_first(entry, "shadowExpire"))),
            mail=str(_first(entry, self.s.mail_attribute) or ""),
        )

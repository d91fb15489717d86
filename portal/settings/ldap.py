"""The admin YAML's section ldap: login against the directory, its failover and the login throttle."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .kinds import (
    DNTemplates,
    Flag,
    GroupName,
    LdapAttribute,
    LdapUri,
    OptionalAbsPath,
    OptionalDN,
    Timeout,
    integer,
    number,
)
from .section import Section, key, rule_error


class LdapSettings(Section):
    enabled: Flag = key(
        True,
        "The portal's own LDAP login. false: the hub's config brings its own authenticator (a site's JupyterHub "
        "with DS Portal's spawner, c.JupyterHub.authenticator_class), and the rest of this section is not used.",
    )
    uris: Annotated[list[LdapUri], Field(min_length=1)] = key(
        ["ldap://127.0.0.1:389"], "Directory servers, tried in order (failover)."
    )
    tls: Literal["auto", "plain", "starttls", "ldaps"] = key(
        "auto",
        "Transport security: auto (StartTLS with certificate checks to any server but this host's own, "
        "ldaps for ldaps:// URIs), plain (logs a warning for a remote server), starttls or ldaps.",
    )
    ca_file: OptionalAbsPath = key("", "CA certificate file for starttls/ldaps; empty = system CAs.")
    mail_attribute: LdapAttribute = key(
        "mail", "The attribute holding a user's e-mail address (the portal's mail goes there, when they opt in)."
    )
    bind_dn_template: DNTemplates = key(
        [],
        "Direct bind: the user's DN with {username}, e.g. uid={username},ou=people,dc=example,dc=org; or a list "
        "of such DNs, tried in order until one binds (as jupyterhub-ldapauthenticator takes it: people in more "
        "than one branch). One DN is a list of one; empty = none (search-then-bind).",
        example="uid={username},ou=people,dc=example,dc=org",
    )
    service_dn: OptionalDN = key("", "Search-then-bind: the service account that searches for users.")
    service_password_file: OptionalAbsPath = key("", "File holding the service account's password (mode 0600).")
    user_search_base: OptionalDN = key(
        "", "Where users are searched (search-then-bind) and read.", example="ou=people,dc=example,dc=org"
    )
    username_attribute: LdapAttribute = key("uid", "Attribute holding the login name.")
    group_search_base: OptionalDN = key(
        "",
        "Where groups are searched (posixGroup memberUid and groupOfNames member); empty = no groups.",
        example="ou=groups,dc=example,dc=org",
    )
    allowed_groups: list[GroupName] = key([], "Only members of these groups may log in; empty = any valid user.")
    connect_timeout: Timeout = key(5, "Seconds to wait for a directory server to accept a connection.")
    response_timeout: Timeout = key(5, "Seconds to wait for a directory answer.")
    max_failures: integer(1, 1000) = key(
        5,
        "Failed logins of one username from one address before that pair waits `backoff` seconds; from "
        "then on, logins of that username from anywhere are slowed (never blocked).",
    )
    slowdown: number(0, 60) = key(
        5,
        "Most seconds a login of a username that failed max_failures times (from any address) waits "
        "before the directory is asked: slows guessing without locking the user out.",
    )
    max_waiting: integer(1, 10000) = key(
        64,
        "Logins that may wait for the directory at once; more get 'too many logins right now' (HTTP 503). "
        "Slowed logins use at most half of them, and wait out their delay without holding one; at most this "
        "many slowed logins of one address wait at once (more get HTTP 429).",
    )
    max_address_failures: integer(1, 10000) = key(
        30,
        "Failed logins from one client address (any username) before its logins are slowed (half a "
        "second, doubling, at most `slowdown` seconds) while its failures outnumber its good logins; never "
        "refused, since many users may share an address.",
    )
    failure_window: integer(1, 86400) = key(300, "Seconds over which failed logins are counted.")
    backoff: integer(1, 86400) = key(60, "Seconds a throttled username-and-address pair must wait.")
    refresh_seconds: integer(0, 86400) = key(
        3600,
        "Seconds after which a logged-in account is looked up again (groups, admin rights, still "
        "allowed); needs service_dn; 0 = only at login.",
    )

    @model_validator(mode="after")
    def _rules(self) -> LdapSettings:
        problems: list = []
        if not self.enabled:  # the site's authenticator: nothing here is read
            return self
        ldaps = [u.startswith("ldaps://") for u in self.uris]
        if self.tls == "ldaps" and not all(ldaps):
            problems.append((".uris", ", ".join(self.uris), "with tls: ldaps every URI must start with ldaps://"))
        if self.tls not in ("ldaps", "auto") and any(ldaps):
            problems.append((".tls", self.tls, "ldaps:// URIs need tls: ldaps (or auto)"))
        for i, template in enumerate(self.bind_dn_template):
            if "{username}" not in template:
                where = ".bind_dn_template" if len(self.bind_dn_template) == 1 else f".bind_dn_template[{i}]"
                problems.append((where, template, "must contain {username}"))
        if not self.bind_dn_template and not (self.service_dn and self.service_password_file and self.user_search_base):
            problems.append(
                ": no way to find users (set bind_dn_template, or service_dn, "
                "service_password_file and user_search_base for search-then-bind)"
            )
        if problems:
            raise rule_error(*problems)
        return self

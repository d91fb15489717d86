"""Log in with the cluster username and password (LDAP).

Built on ldap3 rather than jupyterhub-ldapauthenticator: that one makes its
blocking LDAP calls on the hub's event loop (a hung directory freezes every
page), takes one server address (no failover list), has no failed-login
throttling and keeps no posix attributes in auth_state.

The order of checks: normalize and check the username, refuse an empty
password, check the throttle -- all before any LDAP request -- then ask the
directory in a worker thread, then apply allowed and admin groups.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from jupyterhub.auth import Authenticator
from tornado import web
from traitlets import Integer, Unicode, default

from .clientaddress import address_of
from .config import config_path, loaded_config
from .ldapclient import Directory, DirectoryRefused, DirectoryUnavailable, DirectoryUser
from .loginhandler import SmallLoginHandler
from .settings import PortalSettings, is_username
from .throttle import LoginThrottle

MAX_INPUT = 1024  # longer usernames or passwords are refused unread
KNOWN_PAIR_SECONDS = 86400  # a good login from an address exempts that username there from its address's slowdown
DIRECTORY_DOWN = "The directory service is not answering; try again in a minute."
DIRECTORY_REFUSED = (
    "The login could not be checked: the directory refused the portal's request. Tell the cluster admins."
)
TOO_MANY = "Too many logins right now; try again in a minute."
TOO_MANY_HERE = "Too many failed logins from your network right now; try again in a minute."


def login_error(status: int, message: str) -> web.HTTPError:
    """An error the login page shows in plain words."""
    error = web.HTTPError(status, reason=None)
    error.jupyterhub_message = message
    return error


def short(value: str, limit: int = 40) -> str:
    """A user-supplied value for the log: printable and cut."""
    text = value[:limit].encode("unicode_escape").decode()
    return text + f"...({len(value)} chars)" if len(value) > limit else text


class PortalLDAPAuthenticator(Authenticator):
    """JupyterHub authenticator for the cluster's LDAP directory, from the admin YAML."""

    config_file = Unicode(
        help="""The portal's admin YAML file (its `ldap:` section).

        Default: $DSPORTAL_CONFIG, else /etc/dsportal/portal.yaml.
        Example: c.PortalLDAPAuthenticator.config_file = "/etc/dsportal/portal.yaml"
        """,
    ).tag(config=True)

    @default("config_file")
    def _default_config_file(self) -> str:
        return str(config_path())

    ldap_threads = Integer(
        8,
        help="""Worker threads for LDAP calls (default 8): that many logins can wait on the directory at once.

        Example: c.PortalLDAPAuthenticator.ldap_threads = 16
        """,
    ).tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.settings: PortalSettings = loaded_config(self.config_file)
        ldap = self.settings.ldap
        if not ldap.enabled:  # its checks were skipped: a template without {username} would log anyone in
            raise ValueError(
                "The portal's LDAP login is off (ldap.enabled: false) but the hub's config uses it "
                "(authenticator_class 'dsportal'): set ldap.enabled: true with the directory's settings, "
                "or set the hub's own authenticator_class."
            )
        self.directory = Directory(ldap)
        # see "Login (LDAP)" in the README for the policy these three make
        self.pair_throttle = LoginThrottle(ldap.max_failures, ldap.failure_window, ldap.backoff)
        self.address_throttle = LoginThrottle(ldap.max_address_failures, ldap.failure_window, ldap.backoff)
        self.user_counter = LoginThrottle(2**62, ldap.failure_window, 0)  # counts only: slows, never blocks
        self.address_successes = LoginThrottle(2**62, ldap.failure_window, 0)  # counts only
        self.known_pairs = LoginThrottle(2**62, KNOWN_PAIR_SECONDS, 0)  # username|address: good logins, a day
        self._pool = ThreadPoolExecutor(self.ldap_threads, thread_name_prefix="ldap")
        # refreshes (every request after ldap.refresh_seconds) get threads of their own: a login flood must not
        # hold up logged-in users' requests (a session's report that its server exited among them)
        self._refresh_pool = ThreadPoolExecutor(max(2, self.ldap_threads // 2), thread_name_prefix="ldap-refresh")
        self._waiting = 0  # logins waiting for (or in) the directory
        self._slowed: dict[str, int] = {}  # slowed logins waiting out their delay, per client address

    def get_handlers(self, app):
        return [("/login", SmallLoginHandler)]

    def normalize_username(self, username: str) -> str:
        return username.strip().lower()

    def validate_username(self, username: str) -> bool:
        return is_username(username)

    async def authenticate(self, handler, data):
        credentials = self._credentials(data)
        if credentials is None:
            return None
        username, password = credentials
        client = address_of(handler, self.settings.hub) if handler is not None else ""
        pair = f"{username}|{client}"
        delay = self._throttle_delay(username, client, pair)
        # counted before the directory is asked: a burst of guesses cannot outrun the throttle
        self._count_attempt(username, client, pair)
        if delay > 0:
            await self._slowed_wait(client, delay)
        if self._waiting >= self.directory_slots(slowed=delay > 0):
            self._take_back_attempt(username, client, pair)  # the directory was not asked
            self.log.warning("Login of %s refused: %d logins already wait for the directory", username, self._waiting)
            raise login_error(503, TOO_MANY)
        user = await self._ask_directory(username, password)
        if user is None:
            self.log.warning("Login failed for %s from %s", username, client)
            return None
        self._count_success(username, client, pair)

        why = self.refusal(user)
        if why:
            self.log.warning("Login of %s refused: %s", username, why)
            raise login_error(403, "Your account is not allowed to use this portal; ask the cluster admins for access.")
        return self.auth_model(user)

    def _credentials(self, data) -> tuple[str, str] | None:
        """The normalized username and the password, checked before anything else (None: refused, logged)."""
        raw = data.get("username") or ""
        password = data.get("password") or ""
        if not isinstance(raw, str) or not isinstance(password, str):
            return None
        username = self.normalize_username(raw[: MAX_INPUT + 1])
        if len(raw) > MAX_INPUT or not self.validate_username(username):
            self.log.warning("Login refused before LDAP: malformed username %s", short(raw))
            return None
        if not password:
            raise login_error(400, "Enter your password.")
        if len(password) > MAX_INPUT or "\x00" in password:
            self.log.warning("Login refused before LDAP for %s: unusable password", username)
            return None
        return username, password

    def _throttle_delay(self, username: str, client: str, pair: str) -> float:
        """Seconds this login waits before the directory is asked; 429 for a throttled pair or a full address."""
        wait = self.pair_throttle.wait_seconds([pair])
        if wait > 0:
            self.log.warning("Login of %s from %s refused: throttled for %.0f s more", username, client, wait)
            raise login_error(429, f"Too many failed logins; try again in {int(wait) + 1} seconds.")
        delay = self.slowdown(username, client)
        if delay > 0 and self._slowed.get(client, 0) >= self.settings.ldap.max_waiting:
            self.log.warning(
                "Login of %s from %s refused: %d slowed logins of this address already wait",
                username,
                client,
                self._slowed[client],
            )
            raise login_error(429, TOO_MANY_HERE)
        return delay

    async def _ask_directory(self, username: str, password: str) -> DirectoryUser | None:
        """The directory's answer, in a worker thread, holding one of its waiting slots meanwhile."""
        self._waiting += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, self.directory.authenticate, username, password)
        except DirectoryUnavailable as e:
            self.log.error("Login of %s: no directory server answered (%s)", username, e)
            raise login_error(503, DIRECTORY_DOWN) from None
        except DirectoryRefused as e:
            self.log.error("Login of %s: the directory refused the portal's request: %s", username, e)
            raise login_error(500, DIRECTORY_REFUSED) from None
        finally:
            self._waiting -= 1

    def _count_success(self, username: str, client: str, pair: str) -> None:
        self.pair_throttle.success([pair])
        self.user_counter.success([username])
        self.address_throttle.forgive([client])  # others' failures from this address still count
        self.address_successes.attempt([client])
        self.known_pairs.attempt([pair])

    def directory_slots(self, slowed: bool) -> int:
        """Logins that may wait for the directory at once: max_waiting, half of it for slowed ones (those of
        a failing username or address), so a flood of bad logins always leaves room for good ones."""
        most = self.settings.ldap.max_waiting
        return max(1, most // 2) if slowed else most

    def _count_attempt(self, username: str, client: str, pair: str) -> None:
        self.pair_throttle.attempt([pair])
        self.address_throttle.attempt([client])
        self.user_counter.attempt([username])

    def _take_back_attempt(self, username: str, client: str, pair: str) -> None:
        self.pair_throttle.forgive([pair])
        self.address_throttle.forgive([client])
        self.user_counter.forgive([username])

    async def _slowed_wait(self, client: str, delay: float) -> None:
        """Wait out a slowdown without holding one of the directory's max_waiting slots.

        A slowed login is one whose username or address has been failing;
        had it held a slot while it waits, a flood of bad logins would hold
        them all and turn away everyone's correct password.  At most
        max_waiting slowed logins of one address wait at once (the rest of
        that address gets 429 at once), so a flood costs its own address only.
        """
        self._slowed[client] = self._slowed.get(client, 0) + 1
        try:
            await asyncio.sleep(delay)
        finally:
            self._slowed[client] -= 1
            if not self._slowed[client]:
                del self._slowed[client]

    def slowdown(self, username: str, client: str = "") -> float:
        """Seconds this login waits before the directory is asked: 0 until the username failed max_failures
        times (from anywhere) or its address max_address_failures times (any usernames), then doubling
        from half a second up to ldap.slowdown.

        An address is slowed, never refused, and only while its failures
        outnumber its good logins: a campus NAT or a VPN gateway puts thousands
        of users behind one address, and their typos must not lock everyone out
        or slow everyone down (the scale benchmark's finding).  Guessing from
        one address is held to max_waiting logins per `slowdown` seconds; one
        good login per guess would only halve the guesser's rate.  A username
        that logged in well from this address in the last day is not slowed
        for its address's failures: a flood from behind a NAT cannot slow or
        turn away the users behind it who have logged in before.
        """
        ldap = self.settings.ldap
        address_over = 0
        if client and not self.known_pairs.failures(f"{username}|{client}"):
            failed = self.address_throttle.failures(client)
            address_over = failed - max(ldap.max_address_failures - 1, self.address_successes.failures(client))
        over = max(
            self.user_counter.failures(username) - ldap.max_failures + 1,  # this login is attempt n + 1
            address_over,
        )
        return 0.0 if over <= 0 else min(ldap.slowdown, 0.5 * 2 ** (over - 1))

    def refusal(self, user: DirectoryUser) -> str:
        """Why the directory's account may not use the portal ("" = it may)."""
        if user.locked:
            return "the account is locked or expired in the directory"
        allowed = self.settings.ldap.allowed_groups
        if allowed and not set(user.groups) & set(allowed):
            return "in none of the allowed groups"
        return ""

    def auth_model(self, user: DirectoryUser) -> dict:
        hub = self.settings.hub
        admin = user.username in hub.admin_users or bool(set(user.groups) & set(hub.admin_groups))
        return {"name": user.username, "admin": admin, "auth_state": user.auth_state()}

    async def refresh_user(self, user, handler=None):
        """Look the account up again (every ldap.refresh_seconds): groups, admin rights, still allowed.

        An account that is gone, locked or out of the allowed groups loses
        access: its running sessions are stopped, its next request goes to the
        login page and its tokens are refused (auth_refresh_strict).  While the
        directory does not answer, access stays as it was.
        """
        if not self.settings.ldap.service_dn:
            return True  # nothing to look up with (no password at hand); checked at each login
        loop = asyncio.get_running_loop()
        try:
            state = await user.get_auth_state() or {}
            known = state.get("dn") if isinstance(state.get("dn"), str) else ""  # the entry the login bound as
            found = await loop.run_in_executor(self._refresh_pool, self.directory.lookup, user.name, known)
        except (DirectoryUnavailable, DirectoryRefused) as e:
            self.log.warning("Refresh of %s skipped: the directory did not answer it (%s)", user.name, e)
            return True
        why = "the account is no longer in the directory" if found is None else self.refusal(found)
        if not why:
            return self.auth_model(found)
        self.log.warning("%s lost access to the portal: %s", user.name, why)
        await self.stop_sessions(user, handler)
        return False

    async def stop_sessions(self, user, handler) -> None:
        """Stop (and so scancel) every running or starting session of a user who lost access."""
        for name, spawner in list(user.spawners.items()):
            if not (spawner.active or spawner.pending):
                continue
            self.log.warning("Stopping the session %r of %s, who lost access", name or "default", user.name)
            # as JupyterHub's own DELETE does with a start under way: interrupt it, then stop (the portal's spawner
            # cancels it: spawner/hub/session/stop.py)
            cancel = getattr(spawner, "cancel_start", None)
            if spawner.pending == "spawn" and cancel is not None and cancel():
                deadline = asyncio.get_running_loop().time() + 10
                while spawner.pending == "spawn" and asyncio.get_running_loop().time() < deadline:
                    await asyncio.sleep(0.1)
            if handler is not None:
                await handler.stop_single_user(user, name)
            else:
                await user.stop(name)

    def check_allow_config(self):
        """JupyterHub 5+ warns "nobody can log in" when no allow_* trait is set; the portal's rule is the
        directory's word plus ldap.allowed_groups (enforced in authenticate): say that instead."""
        groups = self.settings.ldap.allowed_groups
        self.log.info(
            "Who may log in: %s",
            f"members of the directory groups {', '.join(groups)} (ldap.allowed_groups)"
            if groups
            else "every account the directory accepts (ldap.allowed_groups is empty)",
        )

    async def check_allowed(self, username, authentication=None):
        # Group checks happen in authenticate(); whoever the directory vouched for may log in.
        if authentication is not None:
            return True
        return await super().check_allowed(username, authentication)

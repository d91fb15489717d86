"""The browser's way to an app: jupyter-server-proxy's handler, to the app's Unix socket, behind the login.

    *  {base}dsportal/apps/ID/...   the app (HTTP and websockets)

jupyter-server-proxy's ProxyHandler authenticates every request with the
session's Jupyter login (guests of a shared session included, and cut off by
spawner/jupyter/sharing/guests.py like any websocket) and speaks to a Unix
socket.  What it leaves to the app is kept here, for an app that is the user's
own code:

- its XSRF check is off ("defer to the proxied app"): a page of another user's
  session is same-site and the browser would send this session's cookies with
  its POST, so a request that changes something must come from this session's
  own origin or carry Jupyter's XSRF token, as for TensorBoard;
- it forwards every request header: the Jupyter and hub cookies and an
  Authorization header (a guest's token, when a guest opens the app) are
  dropped, and the app may not set those cookies;
- it counts the app's own traffic (its pushes, its pings) as use of the
  session: here only what the browser sends does (requests, websocket
  messages), so an app left open in a forgotten tab lets the session idle.
  That replaces its private `_record_activity` (checked against
  jupyter-server-proxy 4.6.0, pinned <5; tests/unit/test_apps.py fails when it
  records activity some other way).
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server_proxy.handlers import ProxyHandler
from tornado import web

from ..session.activity import utcnow
from ..session.origin import same_origin
from .instances import App, Apps

SETTINGS_KEY = "dsportal_apps"
ACTIVITY_KEY = "dsportal-apps"  # in Jupyter Server's last_activity_times: the session's idle check reads it
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
SESSION_COOKIES = ("jupyterhub-", "_xsrf", "username-")  # the hub's, the server's login and XSRF cookies


def is_session_cookie(name: str) -> bool:
    return name.startswith(SESSION_COOKIES)


def cookies_for_app(header: str) -> str:
    """A request's Cookie header without the session's own cookies (pure)."""
    kept = []
    for part in header.split(";"):
        name = part.split("=", 1)[0].strip()
        if name and not is_session_cookie(name):
            kept.append(part.strip())
    return "; ".join(kept)


def sets_session_cookie(set_cookie: str) -> bool:
    """Whether a Set-Cookie header of the app's names one of the session's own cookies (pure)."""
    try:
        cookie = SimpleCookie(set_cookie)
    except CookieError:
        return True  # unreadable: not passed on
    return any(is_session_cookie(name) for name in cookie) or not cookie


def drop_session_cookies(response) -> None:
    """jupyter-server-proxy's rewrite_response hook: the app's answer without Set-Cookie for the session's."""
    kept = [v for v in response.headers.get_list("Set-Cookie") if not sets_session_cookie(v)]
    if "Set-Cookie" in response.headers:
        del response.headers["Set-Cookie"]
    for value in kept:
        response.headers.add("Set-Cookie", value)


class AppProxyHandler(ProxyHandler):
    def initialize(self):
        self.rewrite_response = (drop_session_cookies,)
        self.app: App | None = None

    @property
    def apps(self) -> Apps:
        return self.settings[SETTINGS_KEY]

    @property
    def unix_socket(self):  # jupyter-server-proxy reads it for each request and websocket
        return self.app.socket if self.app is not None else None

    async def prepare(self, *args, **kwargs):
        await super().prepare(*args, **kwargs)  # the session's login, for every request
        id_ = self.path_args[0]
        self.app = self.apps.get(id_)
        if self.app is None or self.app.state != "running":
            raise web.HTTPError(404, "This app is not running; start it again from JupyterLab (File > Apps).")
        self.proxy_base = f"dsportal/apps/{id_}"
        self.absolute_url = self.app.absolute

    def check_xsrf_cookie(self):
        if self.request.method in SAFE_METHODS or same_origin(self.request.headers):
            return None
        return JupyterHandler.check_xsrf_cookie(self)  # Jupyter's own token, as its own requests carry

    def proxy_request_headers(self):
        headers = super().proxy_request_headers()
        # Origin: checked above (a change comes from this session's own origin or carries the XSRF token); an
        # app that checks it again against its own idea of its address (MLflow allows localhost only) would
        # refuse its own page's requests.  A websocket keeps it: the app's own check of it is harmless there.
        dropped = ("Authorization", "Cookie") if self._is_websocket() else ("Authorization", "Cookie", "Origin")
        for name in dropped:
            if name in headers:
                del headers[name]
        cookies = cookies_for_app(self.request.headers.get("Cookie", ""))
        if cookies:
            headers["Cookie"] = cookies
        return headers

    def _is_websocket(self) -> bool:
        return self.request.headers.get("Upgrade", "").lower() == "websocket"

    def _record_activity(self):
        # jupyter-server-proxy calls this for the app's traffic too; the browser's is recorded below
        pass

    def _browser_used_it(self):
        self.settings.setdefault("last_activity_times", {})[ACTIVITY_KEY] = utcnow()

    def on_message(self, message):
        self._browser_used_it()
        return super().on_message(message)

    @staticmethod
    def _path(rest: str | None) -> str:
        # below the app's prefix; jupyter-server-proxy puts the prefix back for an app that wants it (absolute_url)
        return rest or "/"

    async def http_get(self, id_, rest=None):
        return await self.proxy(id_, rest)

    async def open(self, id_, rest=None):
        return await self.proxy_open("localhost", 0, self._path(rest))

    async def proxy(self, id_, rest=None):
        self._browser_used_it()
        return await super().proxy("localhost", 0, self._path(rest))

    post = put = delete = head = patch = options = proxy

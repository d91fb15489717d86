"""The browser's way to an app: jupyter-server-proxy's handler, to the app's Unix socket, behind the login.

    *  {base}dsportal/apps/ID/...   the app (HTTP and websockets)

jupyter-server-proxy's ProxyHandler authenticates every request with the
session's Jupyter login (guests of a shared session included, and cut off by
spawner/jupyter/sharing/guests.py like any websocket) and speaks to a Unix
socket.  An app serves pages on the session's own origin, and it is the user's
own code (or code-server, which serves any file the user can read and proxies
any port): what the proxy leaves to the app is kept here.

- Per-user origins are same-site, so a page of another user's session can make
  the browser send this session's cookies.  Every request must come from this
  session's own origin (the browser's Sec-Fetch-Site), or from no page at all (a
  typed address, a bookmark, a client with a token): a navigation from
  elsewhere gets a page with a link to the app's first page, anything else a
  403; a browser that does not say (Safari before 16.4) gets a 403 that says
  so.  code-server's vscode-remote-resource (any file the user can read) is
  never a page: refused as one, and sandboxed.  A change (a
  POST...) must besides come from this origin (Origin, Referer) or carry
  Jupyter's XSRF token: jupyter-server-proxy leaves that check to the app.
- An app never receives the visitor's login: the Jupyter and hub cookies,
  Authorization, X-XSRFToken, and `token` and `_xsrf` in the query are taken out
  of what it is sent (a guest's token would let the owner's code act as the
  guest).  It may not set those cookies, nor cookies for a wider domain, nor
  clear the site's data, nor let a service worker take more than its path, and
  no other site may frame it.
- Use of the session (the idle culler) is what the browser does: opening an
  app's page or its websocket, and the messages it sends there, not an app
  page's own background requests nor the app's own pushes and pings.  VS
  Code's page answers its server every second or two while its tab is open
  (RPC replies, besides its keep-alives), which the proxy cannot tell from
  typing: an open VS Code tab is use (the users' docs say so).
  jupyter-server-proxy counts every byte either way; its private
  `_record_activity` is replaced (upstream_jupyter_server_proxy.py).
- Responses are read whole (jupyter-server-proxy streams an event stream as it
  comes, past the header rules above and for up to 2 hours, beyond a guest's
  revoked share); no offered app uses event streams
  (upstream_jupyter_server_proxy.py).
"""

from __future__ import annotations

import html
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from jupyter_server_proxy.handlers import ProxyHandler
from tornado import web

from ..session.activity import utcnow
from ..session.origin import same_origin
from ..session.upstream_tornado import finished, response_headers
from .instances import App, Apps
from .origin import APPS_HOST, COOKIE_PREFIX, ENTER_QUERY
from .upstream_jupyter_server_proxy import ProxyOverrides

SETTINGS_KEY = "dsportal_apps"
ACTIVITY_KEY = "dsportal-apps"  # in Jupyter Server's last_activity_times: the session's idle check reads it
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# the hub's, the server's login and XSRF cookies, and an app's pass (origin.py), which stands for the visitor's login
SESSION_COOKIES = ("jupyterhub-", "_xsrf", "username-", "dsportal-app-")
COOKIE_PREFIXES = ("__host-", "__secure-")  # the browsers' cookie name prefixes (matched in any case)
LOGIN_QUERY = ("token", "_xsrf")  # credentials Jupyter and JupyterHub take in a URL's query
LOGIN_HEADERS = ("Authorization", "Cookie", "X-XSRFToken")
FRAMING = "frame-ancestors 'self'"
REQUEST_SECONDS = 120  # an app's answer may take this long (a revoked guest's request ends by then)
DOCUMENT_DESTINATIONS = ("document", "iframe", "frame", "embed", "object")


def is_session_cookie(name: str) -> bool:
    """Whether a cookie is the hub's or the session server's, whatever its prefix: with per-user origins the hub
    names them `__Host-jupyterhub-...` (hub.subdomain_host turns cookie_host_prefix_enabled on)."""
    name = name.lower()
    for prefix in COOKIE_PREFIXES:
        name = name.removeprefix(prefix)
    return name.startswith(SESSION_COOKIES)


def cookies_for_app(header: str) -> str:
    """A request's Cookie header without the session's own cookies (pure)."""
    kept = []
    for part in header.split(";"):
        name = part.split("=", 1)[0].strip()
        if name and not is_session_cookie(name):
            kept.append(part.strip())
    return "; ".join(kept)


def query_for_app(query: str) -> str:
    """A request's query without the credentials Jupyter takes there (pure)."""
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode([(k, v) for k, v in pairs if k not in LOGIN_QUERY])


def uri_for_app(uri: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(query=query_for_app(parts.query)))


def sets_session_cookie(set_cookie: str) -> bool:
    """Whether a Set-Cookie header of the app's may not reach the browser (pure): one that names one of the
    session's own cookies, one for a wider domain than the session's origin (the hub's, every user's), one
    that cannot be read."""
    try:
        cookie = SimpleCookie(set_cookie)
    except CookieError:
        return True
    return not cookie or any(is_session_cookie(name) or morsel["domain"] for name, morsel in cookie.items())


def secure_headers(headers, prefix: str, sandbox: bool = False) -> None:
    """The app's response headers (tornado's HTTPHeaders), made safe for the session's origin: no Set-Cookie of the
    session's cookies nor for a wider domain, no clearing of the site's data, a service worker over the app's own
    `prefix` at most, framed by this origin only; a `sandbox`ed answer is never a page of the origin."""
    kept = [v for v in headers.get_list("Set-Cookie") if not sets_session_cookie(v)]
    for name in ("Set-Cookie", "Clear-Site-Data"):  # the latter would log the visitor out of the hub and all
        if name in headers:
            del headers[name]
    for value in kept:
        headers.add("Set-Cookie", value)
    if "Service-Worker-Allowed" in headers:  # code-server's worker, over its own pages (its "/" is the origin's)
        headers["Service-Worker-Allowed"] = prefix
    headers.add("Content-Security-Policy", FRAMING)  # besides the app's own: browsers apply each
    if sandbox:
        headers.add("Content-Security-Policy", "sandbox")


def any_file(kind: str, path: str) -> bool:
    """Whether the app answers this path with any file the user can read, typed by its name (pure): code-server's
    vscode-remote-resource, whose .html of another user's would be a page of the session's origin."""
    return kind == "vscode" and "/vscode-remote-resource" in path


def fetch_verdict(headers, kind: str, path: str, with_token: bool) -> str:
    """What to do with a request, from the browser's word on where it comes from (pure): "ok"; "confirm" (a
    navigation from another site: a page with a link); "refuse"; "old browser" (the browser's cookies, and no
    word on where the request comes from)."""
    site = headers.get("Sec-Fetch-Site", "")
    if site in ("same-site", "cross-site"):
        return "confirm" if headers.get("Sec-Fetch-Mode") == "navigate" else "refuse"
    websocket = headers.get("Upgrade", "").lower() == "websocket"
    # Safari before 16.4: nothing tells another site's link from the user's.  A websocket carries no Sec-Fetch-Site
    # in Chromium either: its Origin must be the session's (Jupyter's check_origin), which settles where it is from
    if not site and not with_token and not websocket:
        return "old browser"
    # code-server serves any file the user can read at vscode-remote-resource, typed by its name: as a page of
    # the session's origin an .html file there would be script on it
    if any_file(kind, path) and headers.get("Sec-Fetch-Dest", "") in DOCUMENT_DESTINATIONS:
        return "refuse"
    return "ok"


class AppProxyHandler(ProxyOverrides, ProxyHandler):
    def initialize(self):
        self.app: App | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # jupyter-server-proxy writes the app's headers itself (and replaces set_header and flush on the
        # instance); its first flush sends them, after they are made safe here
        flush = self.flush
        secured = []

        def flush_secured(*a, **kw):
            if not secured:
                secured.append(True)
                id_, rest = self.path_args[0], self.path_args[1] or "/"
                prefix = url_path_join(self.base_url, "dsportal/apps", id_, "")
                kind = self.app.kind if self.app is not None else ""
                # on the session's origin an app answers clients with a token only; never a page there
                sandbox = any_file(kind, rest) or not self.on_apps_origin
                secure_headers(response_headers(self), prefix, sandbox=sandbox)
            return flush(*a, **kw)

        self.flush = flush_secured

    @property
    def apps(self) -> Apps:
        return self.settings[SETTINGS_KEY]

    @property
    def unix_socket(self):  # jupyter-server-proxy reads it for each request and websocket
        return self.app.socket if self.app is not None else None

    @property
    def on_apps_origin(self) -> bool:
        """Whether the request came to an app's own origin (origin.py; any app's), not to the session's."""
        return bool(APPS_HOST.fullmatch(self.request.host_name))

    async def prepare(self, *args, **kwargs):
        id_, rest = self.path_args[0], self.path_args[1] or "/"
        client = "Authorization" in self.request.headers  # a client with a token, not a browser's page
        if self.on_apps_origin:
            found = self.apps.get(id_)
            if found is None or urlsplit(found.origin).hostname != self.request.host_name:
                raise web.HTTPError(404, "No such app at this address.")  # another app's origin has none of it
            # the pass becomes a token below, and Jupyter checks no Origin of a request with a token: a websocket
            # (which carries no Sec-Fetch-Site) from another page of the site would get in with the pass cookie
            if self._is_websocket() and not same_origin(self.request.headers):
                raise web.HTTPError(403, "Apps take connections from their own pages only.")
            if not self._let_in(id_):  # answered: the door, a redirect
                return
        await super().prepare(*args, **kwargs)  # the session's login (on the apps' origin: the pass's token)
        if finished(self):  # sent to log in
            return
        self.app = self.apps.get(id_)
        if self.app is None or self.app.state != "running":
            raise web.HTTPError(404, "This app is not running; start it again from JupyterLab (Running apps).")
        with_token = not self.on_apps_origin and (client or "token" in self.request.query_arguments)
        verdict = fetch_verdict(self.request.headers, self.app.kind, rest, with_token)
        if verdict == "confirm":
            self.app = None  # nothing goes to the app
            self.set_header("Content-Security-Policy", f"{FRAMING}; default-src 'none'; style-src 'unsafe-inline'")
            # to the app's first page only: nothing of the other site's address (a folder, a query) goes along
            self.finish(CONFIRM.format(url=html.escape(url_path_join(self.base_url, "dsportal/apps", id_, ""))))
            return
        if verdict == "old browser":
            raise web.HTTPError(
                403, "This browser does not say which page a request comes from; open your apps in a current one."
            )
        if verdict == "refuse":
            raise web.HTTPError(403, "Apps take requests from the session's own pages only.")
        if not self.on_apps_origin and not client:  # a browser: to the apps' own origin
            self._to_apps_origin(id_)
            return
        self.proxy_base = f"dsportal/apps/{id_}"
        self.absolute_url = self.app.absolute

    def _to_apps_origin(self, id_: str) -> None:
        """A browser on the session's origin: a ticket, and on to the app's door at the apps' origin."""
        if self.request.method not in ("GET", "HEAD") or self._is_websocket():
            raise web.HTTPError(403, "Apps are served at their own address; open this app from JupyterLab.")
        token = self.identity_provider.hub_auth.get_token(self) if hasattr(self.identity_provider, "hub_auth") else ""
        if not token:
            raise web.HTTPError(403, "Log in to your session again, then open the app from JupyterLab.")
        ticket = self.apps.entries.issue(id_, token, uri_for_app(self.request.uri))
        door = url_path_join(self.base_url, "dsportal/apps", id_, "")
        self.redirect(f"{self.app.origin}{door}?{urlencode({ENTER_QUERY: ticket})}")

    def _let_in(self, id_: str) -> bool:
        """On the apps' origin: True to go on with the pass's token as the request's login; else answered (the
        door that spends a ticket, or back to the session's origin for one)."""
        ticket = self.get_query_argument(ENTER_QUERY, "")
        if ticket and self.request.method == "GET":
            entered = self.apps.entries.enter(ticket, id_)
            if entered is None:
                raise web.HTTPError(403, "This link into your app has expired; open the app again from JupyterLab.")
            key, found = entered
            self.set_cookie(COOKIE_PREFIX + id_, key, path="/", secure=True, httponly=True, samesite="Strict")
            self.set_header("Content-Security-Policy", f"{FRAMING}; default-src 'none'")
            self.set_header("Referrer-Policy", "no-referrer")
            self.set_header("Cache-Control", "no-store")
            # a page, not a redirect: the app's first request then comes from its own origin (Sec-Fetch-Site)
            self.finish(ENTER.format(url=html.escape(found.next_uri)))
            return False
        token = self.apps.entries.token(self.get_cookie(COOKIE_PREFIX + id_, ""), id_)
        if token is not None:
            self.request.headers["Authorization"] = f"token {token}"  # dropped before the app (LOGIN_HEADERS)
            return True
        navigation = self.request.method == "GET" and self.request.headers.get("Sec-Fetch-Mode") == "navigate"
        if navigation and self.apps.session_origin:
            # no pass (a new browser, an old tab): the session's origin gives one, with its own checks
            self.redirect(self.apps.session_origin + uri_for_app(self.request.uri))
            return False
        raise web.HTTPError(403, "Open this app from JupyterLab (Running apps): this browser has no pass into it.")

    def check_xsrf_cookie(self):
        if self.request.method in SAFE_METHODS or same_origin(self.request.headers):
            return None
        if self.on_apps_origin:  # no Jupyter XSRF cookie there: only the app's own pages may change anything
            raise web.HTTPError(403, "Apps take changes from their own pages only.")
        return JupyterHandler.check_xsrf_cookie(self)  # Jupyter's own token, as its own requests carry

    def proxy_request_headers(self):
        headers = super().proxy_request_headers()
        # Origin: checked above (a change comes from this session's own origin or carries the XSRF token); an
        # app that checks it again against its own idea of its address (MLflow allows localhost only) would
        # refuse its own page's requests.  A websocket keeps it: the app's own check of it is harmless there.
        dropped = LOGIN_HEADERS if self._is_websocket() else (*LOGIN_HEADERS, "Origin")
        for name in dropped:
            if name in headers:
                del headers[name]
        cookies = cookies_for_app(self.request.headers.get("Cookie", ""))
        if cookies:
            headers["Cookie"] = cookies
        return headers

    def get_client_uri(self, protocol, host, port, proxied_path):
        return uri_for_app(super().get_client_uri(protocol, host, port, proxied_path))

    def proxy_request_options(self):
        return {**super().proxy_request_options(), "request_timeout": REQUEST_SECONDS}

    def _is_websocket(self) -> bool:
        return self.request.headers.get("Upgrade", "").lower() == "websocket"

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
        self._browser_used_it()
        return await self.proxy_open("localhost", 0, self._path(rest))

    async def proxy(self, id_, rest=None):
        # a page opened, or a client that is no browser; a page's own background requests are not
        if self.request.headers.get("Sec-Fetch-Mode", "navigate") == "navigate":
            self._browser_used_it()
        return await super().proxy("localhost", 0, self._path(rest))

    post = put = delete = head = patch = options = proxy


ENTER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">
<title>Opening your app - DS Portal</title></head>
<body><p>Opening your app&hellip; <a href="{url}">Continue</a></p></body></html>
"""

CONFIRM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Open your app - DS Portal</title>
<style>body{{font-family:system-ui,sans-serif;margin:3rem auto;max-width:40rem}}a{{font-size:1.2rem}}</style></head>
<body><h1>Open your app?</h1>
<p>You came to one of your session's apps from another page. Apps open only from your session's own pages:
follow this link if you meant to open it.</p>
<p><a href="{url}">Open the app</a></p></body></html>
"""

"""Real Chromium for the browser tests: how it is started, logging in, what a page must not show, and the gallery.

`WatchedBrowser` hands out browser contexts whose every console error, uncaught
page error and failed request (HTTP 4xx/5xx, a request the network refused)
is collected; a test names the ones it provokes (`allow`), and any other fails
it.  What a third-party app's own page says in red (VS Code, MLflow, Streamlit,
Dash: their scripts log errors of their own) is the app's, not the portal's
(`console_error_owner`, by the page's address); its requests, and what the
browser itself reports on it (a refused websocket, a blocked load), stay the
portal's to answer for.  `shot` saves a screenshot with what it shows, after
checking that no error text is visible; the session ends with an index page of
them all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, Response, WebError, expect

from spawner.contract import APPS_LABEL_PATTERN
from spawner.jupyter.apps.origin import ENTER_QUERY
from tests.support import lanes
from tests.support.a11y import check_accessible, checked_in_full
from tests.support.cluster import HUB, ROOT

CHROMIUM = "/usr/bin/chromium"
# as root no sandbox; no background networking on this closed network (see env notes)
PORTAL_CERT = Path("/etc/dsportal/tls/portal.crt")


def trust_portal_certificate() -> str:
    """Chromium's flag that trusts the dev portal's certificate (its key's SPKI hash): the dev CA is in the
    system's store, which Chromium does not read."""
    pem = subprocess.run(
        ["openssl", "x509", "-pubkey", "-noout", "-in", str(PORTAL_CERT)], capture_output=True, check=True, timeout=30
    ).stdout
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-outform", "der"], input=pem, capture_output=True, check=True, timeout=30
    ).stdout
    return "--ignore-certificate-errors-spki-list=" + base64.b64encode(hashlib.sha256(der).digest()).decode()


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# a lane's own folder where `deploy/devcluster test` runs lanes side by side (tests/support/lanes.py)
ARTIFACTS = Path(
    os.environ.get("DSPORTAL_ARTIFACTS", ROOT / "artifacts" / "journey" / os.environ.get("DSPORTAL_TEST_LANE", ""))
)
SHOTS: list[tuple[Path, str]] = []  # each screenshot and what it shows
expect.set_options(timeout=60_000)
# Words that mean a page shows an error a person would read (JupyterHub's, tornado's, the browser's).
ERROR_TEXTS = re.compile(
    r"argument missing|Traceback|Internal Server Error|Bad Request|Forbidden|Not Found|"
    r"Service Unavailable|Bad Gateway|HTTP [45]\d\d|\b[45]\d\d : |\bundefined\b|\bNaN\b"
)

# A third-party app's own page: at an app's own origin (https://apps--LABEL.HOST:PORT, spawner/contract.py), under
# that app's path (/user/NAME[/SESSION]/dsportal/apps/ID/, spawner/jupyter/apps/proxy.py).  The same path on the
# session's origin, the door at the app's origin (its one-use ticket in the query) and any other path there are
# answered by the portal.
APP_HOST = re.compile(APPS_LABEL_PATTERN + r"\..+")
APP_PATH = re.compile(r"/user/[^/]+/(?:[^/]+/)?dsportal/apps/[0-9a-f]{12}/")


def page_owner(url: str) -> str:
    """Whose page the address is: "app" for a third-party app's own (VS Code, MLflow, Streamlit, Dash), else
    "portal" (the hub's pages, JupyterLab with the portal's extension, the apps' doors and error pages)."""
    parts = urlsplit(url)
    if (
        parts.scheme == "https"
        and APP_HOST.fullmatch(parts.hostname or "")
        and APP_PATH.match(parts.path)
        and ENTER_QUERY not in parse_qs(parts.query)
    ):
        return "app"
    return "portal"


def console_error_owner(page_url: str, said_by_script: bool) -> str:
    """Whose a console error is: what an app's own page's script says (console.error, an uncaught exception) is the
    app's; what the browser itself reports (a refused websocket, a Content-Security-Policy or CORS block: the
    answers and headers the portal's proxy sent) and anything on the portal's own pages is the portal's."""
    return "app" if said_by_script and page_owner(page_url) == "app" else "portal"


def _page_url_of(message: ConsoleMessage) -> str:
    """The address of the page (or worker) whose console the message is in."""
    if message.page is not None:
        return message.page.url
    return message.worker.url if message.worker is not None else (message.location or {}).get("url", "")


@dataclass
class Allowance:
    url: re.Pattern
    statuses: frozenset[int]  # empty: any status, console errors and failures of that URL too
    why: str


@dataclass
class PageProblems:
    """What went wrong in a test's pages; `allow` names what the test provokes on purpose."""

    allowed: list[Allowance] = field(default_factory=list)
    found: list[str] = field(default_factory=list)
    apps_own: list[str] = field(default_factory=list)  # what the apps' own pages said in red: theirs, not counted

    def allow(self, url: str, *statuses: int, why: str) -> None:
        self.allowed.append(Allowance(re.compile(url), frozenset(statuses), why))

    def _is_allowed(self, url: str, status: int | None) -> bool:
        return any(a.url.search(url) and (not a.statuses or status in a.statuses) for a in self.allowed)

    def on_response(self, response: Response) -> None:
        if response.status >= 400 and not self._is_allowed(response.url, response.status):
            self.found.append(f"HTTP {response.status} {response.request.method} {response.url}")

    def on_request_failed(self, request: Request) -> None:
        failure = request.failure or ""
        if "ERR_ABORTED" in failure:  # the page navigated away with the request under way: nothing failed
            return
        if not self._is_allowed(request.url, None):
            self.found.append(f"request failed ({failure}): {request.method} {request.url}")

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        url = (message.location or {}).get("url", "")
        status = re.search(r"status of (\d{3})", message.text)
        # the browser's own line for a failed load repeats a response already judged above
        if status and ("Failed to load resource" in message.text):
            return
        page_url = _page_url_of(message)
        # the browser's own lines carry no arguments; a script's console.error(...) carries what it was given
        if console_error_owner(page_url, said_by_script=bool(message.args)) == "app":
            self.apps_own.append(f"at {page_url}: {message.text[:300]}")
            return
        if not (
            self._is_allowed(url, None) or any(a.url.search(message.text) and not a.statuses for a in self.allowed)
        ):
            self.found.append(f"console error at {url}: {message.text[:300]}")

    def on_page_error(self, error: WebError) -> None:
        page_url = error.page.url if error.page is not None else ""
        if console_error_owner(page_url, said_by_script=True) == "app":
            self.apps_own.append(f"uncaught at {page_url}: {str(error.error)[:300]}")
            return
        self.found.append(f"uncaught error in a page: {str(error.error)[:300]}")

    def watch(self, context: BrowserContext) -> BrowserContext:
        context.on("response", self.on_response)
        context.on("requestfailed", self.on_request_failed)
        context.on("console", self.on_console)
        context.on("weberror", self.on_page_error)
        return context


class WatchedBrowser:
    """Chromium for one test: contexts it opens report their problems to `problems`."""

    def __init__(self, browser: Browser):
        self.browser = browser
        self.problems = PageProblems()
        self.contexts: list[BrowserContext] = []

    def new_context(self, **options) -> BrowserContext:
        context = self.problems.watch(self.browser.new_context(**options))
        self.contexts.append(context)
        return context

    def allow(self, url: str, *statuses: int, why: str) -> None:
        self.problems.allow(url, *statuses, why=why)

    def close(self) -> None:
        for context in self.contexts:
            try:
                context.close()
            except Exception:  # closed by the test already
                pass


def launch_options() -> dict:
    """Playwright's launch options for Debian's Chromium, headless, trusting the dev portal's certificate."""
    return {
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [*CHROMIUM_ARGS, trust_portal_certificate()],
    }


def visible_errors(page: Page) -> list[str]:
    """Error words in what the page shows (its visible text), with the line each is on."""
    text = page.locator("body").inner_text(timeout=10_000)
    return [line.strip() for line in text.splitlines() if ERROR_TEXTS.search(line)]


def shot(page: Page, name: str, shows: str, errors_expected: bool = False, within: str | None = None) -> None:
    """A screenshot of the whole page, named, with what it shows; a page with error text fails the test unless
    the test provokes that error (`errors_expected`).  A hub page is checked for barriers first
    (tests/support/a11y.py), whole; another page only in the part `within` names (the extension's panel)."""
    if not errors_expected:
        errors = visible_errors(page)
        assert not errors, f"the page '{name}' shows error text: {errors}"
    if checked_in_full(page.url):
        check_accessible(page, name)
    elif within is not None:
        check_accessible(page, name, within)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{len(SHOTS) + 1:02d}-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    SHOTS.append((path, shows))


def write_gallery() -> Path:
    """index.html beside the screenshots: each one with what it shows."""
    items = "\n".join(
        f'<figure><img src="{html.escape(p.name)}" alt="{html.escape(shows)}" loading="lazy">'
        f"<figcaption><b>{html.escape(p.name)}</b>: {html.escape(shows)}</figcaption></figure>"
        for p, shows in SHOTS
    )
    index = ARTIFACTS / "index.html"
    index.write_text(f"""<!doctype html><meta charset="utf-8"><title>DS Portal: the browser tests' screenshots</title>
<style>body{{font-family:sans-serif;max-width:70rem;margin:auto}}img{{max-width:100%;border:1px solid #ccc}}
figure{{margin:2rem 0}}</style><h1>DS Portal: what the browser tests saw ({len(SHOTS)} screenshots)</h1>
{items}
""")
    return index


def log_in(page: Page, username: str, password: str) -> None:
    lanes.check_person(username, lanes.lane())
    page.goto(f"{HUB}/hub/login")
    page.fill("#username_input", username)
    page.fill("#password_input", password)
    page.click("#login_submit")

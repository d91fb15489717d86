"""Real Chromium for the browser tests: how it is started, logging in, and the screenshots of each step."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.cluster import HUB, ROOT

CHROMIUM = "/usr/bin/chromium"
# as root no sandbox; no background networking on this closed network (see env notes)
PORTAL_CERT = Path("/etc/dsportal/tls/portal.crt")


def trust_portal_certificate() -> str:
    """Chromium's flag that trusts the dev portal's certificate (its key's SPKI hash): the dev CA is in the
    system's store, which Chromium does not read."""
    pem = subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in", str(PORTAL_CERT)], capture_output=True,
                         check=True, timeout=30).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pem, capture_output=True, check=True,
                         timeout=30).stdout
    return "--ignore-certificate-errors-spki-list=" + base64.b64encode(hashlib.sha256(der).digest()).decode()


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
ARTIFACTS = Path(os.environ.get("DSPORTAL_ARTIFACTS", ROOT / "artifacts" / "journey"))
SHOTS: list[Path] = []
expect.set_options(timeout=60_000)


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{len(SHOTS) + 1:02d}-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    SHOTS.append(path)


def log_in(page: Page, username: str, password: str) -> None:
    page.goto(f"{HUB}/hub/login")
    page.fill("#username_input", username)
    page.fill("#password_input", password)
    page.click("#login_submit")

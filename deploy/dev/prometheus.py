"""The dev cluster's Prometheus: Debian's package, scraping the hub's /hub/metrics every few seconds.

The scrape config is the shipped one (deploy/prometheus/prometheus.yml) with
the dev cluster's address, token file and a short interval.  The
scraper's token is made once and kept in two files, each readable only by
its reader: the hub's account (usage.scraper_token_file) and the
prometheus account (the scrape's credentials_file).  Its data lives in its
own folder, which `reset` removes.
"""

from __future__ import annotations

import re
import secrets
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from .common import ETC, SERVICE_USER, write_if_changed
from .supervisor import Program

ACCOUNT = "prometheus"  # made by Debian's prometheus package
PORT = 9090
URL = f"http://127.0.0.1:{PORT}"
HOME = Path("/var/lib/dsportal-prometheus")
CONFIG = ETC / "prometheus" / "prometheus.yml"
HUB_TOKEN = ETC / "prometheus-scraper.token"  # the hub's account's: usage.scraper_token_file
SCRAPER_TOKEN = ETC / "prometheus" / "scraper.token"  # the prometheus account's: the scrape's credentials
SHIPPED = Path(__file__).resolve().parent.parent / "prometheus" / "prometheus.yml"
SCRAPE_SECONDS = 5  # the tests wait for a scrape: seconds, not the shipped 30


def dev_config(shipped: str) -> str:
    """The shipped scrape config with the dev cluster's interval, token and address (pure).  Its CA is the
    system's trust store, as shipped: `up` adds the dev CA to it (deploy/dev/tls.py)."""
    text = re.sub(r"(scrape_interval|evaluation_interval): \d+s", rf"\1: {SCRAPE_SECONDS}s", shipped)
    text = text.replace("/etc/prometheus/dsportal-scraper.token", str(SCRAPER_TOKEN))
    return text.replace('["portal.example.org:8000"]', '["localhost:8000"]')


def argv() -> list[str]:
    return [
        "/usr/bin/prometheus",
        f"--config.file={CONFIG}",
        f"--storage.tsdb.path={HOME / 'data'}",
        "--storage.tsdb.retention.time=15d",
        f"--web.listen-address=127.0.0.1:{PORT}",
    ]


def program() -> Program:
    return Program("prometheus", argv(), str(PORT), user=ACCOUNT, directory=str(HOME))


def ensure_files() -> bool:
    """Its folder, the scrape config and the token's two copies; True if Prometheus must restart."""
    HOME.mkdir(mode=0o750, exist_ok=True)
    shutil.chown(HOME, ACCOUNT, ACCOUNT)
    (ETC / "prometheus").mkdir(mode=0o755, exist_ok=True)
    if not HUB_TOKEN.exists():
        write_if_changed(HUB_TOKEN, secrets.token_hex(32) + "\n", mode=0o600, owner=SERVICE_USER)
    token = HUB_TOKEN.read_text()
    changed = write_if_changed(SCRAPER_TOKEN, token, mode=0o600, owner=ACCOUNT)
    return write_if_changed(CONFIG, dev_config(SHIPPED.read_text())) or changed


def answers() -> bool:
    try:
        with urllib.request.urlopen(f"{URL}/-/ready", timeout=5) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False

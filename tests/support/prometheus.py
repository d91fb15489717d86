"""Debian's Prometheus in a temp folder, scraping a test hub's /hub/metrics (the usage benchmark's rig).

The dev cluster runs its own (deploy/dev/prometheus.py, the shipped scrape
config); this one scrapes a hub on plain HTTP on loopback, with a token of
the caller's that holds `read:metrics`, every `scrape_seconds`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.http import free_port, wait_until

BINARY = "/usr/bin/prometheus"


def scrape_config(hub_address: str, token_file: Path, scrape_seconds: int) -> str:
    """The scrape config for one hub at `hub_address` (host:port, plain HTTP) (pure)."""
    return (
        "global:\n"
        f"  scrape_interval: {scrape_seconds}s\n"
        f"  evaluation_interval: {scrape_seconds}s\n"
        "scrape_configs:\n"
        "  - job_name: dsportal\n"
        "    scheme: http\n"
        "    metrics_path: /hub/metrics\n"
        "    authorization:\n"
        "      type: Bearer\n"
        f"      credentials_file: {token_file}\n"
        "    static_configs:\n"
        f'      - targets: ["{hub_address}"]\n'
    )


class Prometheus:
    """`Prometheus(token)` picks its port (its `url` goes into the hub's config); `start(hub_address)` then scrapes
    that hub."""

    def __init__(self, token: str, scrape_seconds: int = 5):
        if not Path(BINARY).exists():
            raise RuntimeError("Prometheus is not installed; `deploy/devcluster up` installs Debian's prometheus")
        self.root = Path(tempfile.mkdtemp(prefix="dsportal-prometheus-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token_file = self.root / "token"
        self.token_file.write_text(token)
        self.token_file.chmod(0o600)
        self.scrape_seconds = scrape_seconds
        self.proc: subprocess.Popen | None = None

    def start(self, hub_address: str, timeout: float = 60) -> None:
        config = self.root / "prometheus.yml"
        config.write_text(scrape_config(hub_address, self.token_file, self.scrape_seconds))
        argv = [
            BINARY,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.root / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.proc = subprocess.Popen(argv, stdout=open(self.root / "prometheus.log", "ab"), stderr=subprocess.STDOUT)
        wait_until(self.ready, timeout, "Prometheus ready")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as answer:
                return answer.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def scraped(self) -> bool:
        """Whether its last scrape of the hub succeeded."""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query?query=up", timeout=5) as answer:
                results = json.load(answer)["data"]["result"]
        except (OSError, urllib.error.URLError, ValueError, KeyError):
            return False
        return bool(results) and results[0]["value"][1] == "1"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        shutil.rmtree(self.root, ignore_errors=True)

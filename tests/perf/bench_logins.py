"""Scenario 4 of the scale benchmark: logins against a real slapd with 200 accounts, 20 per second for 30 s.

Twice: correct passwords only; then with one attempt in ten first trying a
wrong password for its account, where the correct password must still get
in (every client here shares one address, as behind a campus NAT: the
address is slowed once it has failed `max_address_failures` times, never
refused).  Prints p50 / p99 of a whole login (the login page, then the
form's POST), errors, and correct passwords refused.  Asserts nothing about
speed.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_logins   (from the repository's root, as root)
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from deploy.dev.directory import Directory, Group, Person
from tests.perf.stats import ms
from tests.support.hub import FormBrowser, HubProcess
from tests.support.mockslurm import MockSlurm, config_data
from tests.support.slapd import Slapd, ldap_settings

ACCOUNTS = 200
RATE = 20  # logins per second
SECONDS = 30


def people() -> Directory:
    accounts = [Person(f"l{i:03d}", f"pw-{i:03d}-ok", 30000 + i) for i in range(ACCOUNTS)]
    return Directory(people=accounts, groups=[Group("datasci", [p.uid for p in accounts], "posixGroup", 5000)])


def run_logins() -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="dsportal-logins-") as folder:
        root = Path(folder)
        slapd = Slapd(root / "slapd", people())
        slapd.start()
        portal = config_data(MockSlurm(root / "mockslurm"))
        portal["ldap"] = ldap_settings(slapd)
        hub = HubProcess(root / "hub", portal, ldap=True, after='c.JupyterHub.log_level = "INFO"\n')
        hub.start(timeout=120)
        try:
            return {**_measure(hub, typos=False), **_measure(hub, typos=True)}
        finally:
            hub.stop()
            slapd.stop()


def _measure(hub: HubProcess, typos: bool) -> dict[str, str]:
    times: list[float] = []
    outcome = {"in": 0, "refused": 0, "wrong refused": 0, "wrong let in": 0, "errors": 0}
    lock = threading.Lock()

    def login(n: int) -> None:
        i = n % ACCOUNTS
        browser = FormBrowser(hub.url)
        try:
            if typos and n % 10 == 0:
                status, _, location = browser.login(f"l{i:03d}", "not-the-password")
                with lock:
                    outcome["wrong let in" if status == 302 else "wrong refused"] += 1
                browser = FormBrowser(hub.url)
            began = time.monotonic()
            status, _, location = browser.login(f"l{i:03d}", f"pw-{i:03d}-ok")
            with lock:
                times.append(time.monotonic() - began)
                outcome["in" if status == 302 and location.startswith("/hub/") else "refused"] += 1
        except OSError:
            with lock:
                outcome["errors"] += 1

    began = time.monotonic()
    with ThreadPoolExecutor(64) as pool:
        for n in range(RATE * SECONDS):
            time.sleep(max(0.0, began + n / RATE - time.monotonic()))
            pool.submit(login, n)
    elapsed = time.monotonic() - began
    phase = "4 with typos:" if typos else "4"
    return {
        f"{phase} logins": f"{len(times)} in {elapsed:.0f} s ({len(times) / elapsed:.1f} per second)",
        f"{phase} login p50 / p99": f"{ms(times, 50)} / {ms(times, 99)}",
        f"{phase} correct passwords refused": str(outcome["refused"]),
        f"{phase} wrong passwords refused / let in": f"{outcome['wrong refused']} / {outcome['wrong let in']}",
        f"{phase} errors": str(outcome["errors"]),
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help, and no other argument
    for key, value in run_logins().items():
        print(f"  {key:<40} {value}")


if __name__ == "__main__":
    main()

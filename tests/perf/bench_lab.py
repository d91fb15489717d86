"""Benchmark: until JupyterLab is usable in Chromium (its launcher drawn), portal and bare, same run.

Portal: from the click on the options form's Start until the launcher of the
session's JupyterLab is drawn, with the moment the browser reached
/user/NAME/lab.  Bare: from starting `jupyter lab` of the same environment as
the same user (token login, no hub: a bare jupyterhub-singleuser cannot log a
browser in without one) until its launcher is drawn.  Each start opens a
fresh workspace.  Prints numbers; asserts nothing about speed.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_lab [--runs 3]     (from the repository's root)
"""

from __future__ import annotations

import argparse
import re
import secrets
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from playwright.sync_api import Browser, expect, sync_playwright

from tests.support import browser as browser_support
from tests.support.cluster import HUB, TOKEN_FILE, Cluster
from tests.support.demo import password_of
from tests.support.http import answers, free_port, wait_until

USER = "alice"
VENV = Path("/opt/dsportal/venv")
WORKSPACES = Path(f"/home/{USER}/.jupyter/lab/workspaces")
LAUNCHER = ".jp-Launcher .jp-LauncherCard"


def fresh_workspace() -> None:
    """No workspace of an earlier start: JupyterLab opens with its launcher."""
    shutil.rmtree(WORKSPACES, ignore_errors=True)


def portal_start(browser: Browser, cluster: Cluster) -> tuple[float, float]:
    """(seconds from Start to the browser at /user/NAME/lab, seconds from Start to the launcher drawn)."""
    fresh_workspace()
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    browser_support.log_in(page, USER, password_of(USER))
    page.goto(f"{HUB}/hub/spawn/{USER}")
    page.locator("label[for=dsportal-gpus-1]").click()
    started = time.perf_counter()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(re.compile(rf"/user/{USER}/lab"), timeout=120_000)
    redirected = time.perf_counter() - started
    expect(page.locator(LAUNCHER).first).to_be_visible(timeout=120_000)
    drawn = time.perf_counter() - started
    context.close()
    cluster.stop(USER)
    return redirected, drawn


def bare_lab(browser: Browser) -> float:
    """Seconds from starting `jupyter lab` as the user until its launcher is drawn."""
    fresh_workspace()
    port, token = free_port(), secrets.token_hex(16)
    env = {"PATH": f"{VENV}/bin:/usr/bin:/bin", "HOME": f"/home/{USER}", "USER": USER, "LANG": "C.UTF-8"}
    argv = [
        *("sudo", "-n", "--preserve-env=" + ",".join(env), "-u", USER, "--", f"{VENV}/bin/jupyter-lab"),
        *("--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}"),
    ]
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=f"/home/{USER}")
    try:
        wait_until(
            lambda: answers(f"http://127.0.0.1:{port}/api", proc, "jupyter lab"), 60, "jupyter lab answering", 0.05
        )
        page.goto(f"http://127.0.0.1:{port}/lab?token={token}")
        expect(page.locator(LAUNCHER).first).to_be_visible(timeout=60_000)
        return time.perf_counter() - started
    finally:
        context.close()
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    cluster.clean()
    redirected, portal, bare = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(**browser_support.launch_options())
        for _ in range(runs):
            bare.append(bare_lab(browser))
            to_lab, drawn = portal_start(browser, cluster)
            redirected.append(to_lab)
            portal.append(drawn)
        browser.close()
    p_, b = statistics.median(portal), statistics.median(bare)
    print(
        f"bench launcher drawn in Chromium (portal, from Start): median {p_:.2f} s  runs "
        f"{' '.join(f'{x:.2f}' for x in portal)}  (browser at /user/{USER}/lab: median {statistics.median(redirected):.2f} s)"
    )
    print(
        f"bench launcher drawn in Chromium (bare jupyter lab):  median {b:.2f} s  runs {' '.join(f'{x:.2f}' for x in bare)}"
    )
    print(f"bench ratio portal / bare: {p_ / b:.2f}")


if __name__ == "__main__":
    main()

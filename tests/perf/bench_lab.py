"""Benchmark: until JupyterLab is usable in Chromium (its launcher drawn with every kernel), portal and bare, same run.

Portal: from the click on the options form's Start until the launcher of the
session's JupyterLab shows a card of every kernel of the session (its
`/api/kernelspecs` once the session's kernelspecs are written: the module and
container kernels too).  Bare: from starting `jupyter lab` of the same
environment as the same user (token login, no hub: a bare
jupyterhub-singleuser cannot log a browser in without one) until its launcher
shows every kernel that server offers, with DS Portal's own server and
JupyterLab extensions off (they are the portal; every other extension of the
environment stays on).  Each start opens a fresh workspace in a fresh browser
context (no cache).  The launcher is watched in the page (tests/perf/timeline.py:
its first card; tests/support/launcher.py: every kernel card).  Prints the
medians, their ratio, and the timeline of the median start of each (the hub's
log, the session's log, the browser's own timings); asserts nothing about speed.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_lab [--runs 5]   (from the repository's root)
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from tests.perf.timeline import DRAWN_SCRIPT, PAGE_TIMES_SCRIPT, hub_marks, in_order, job_marks, page_marks
from tests.support import browser as browser_support
from tests.support.cluster import HUB, TOKEN_FILE, Cluster
from tests.support.demo import password_of
from tests.support.http import answers, free_port, wait_until
from tests.support.launcher import HISTORY, KERNEL_CARDS_SCRIPT, SHOWS_ALL, display_names, every_kernel_at

USER = "alice"
VENV = Path("/opt/dsportal/venv")
WORKSPACES = Path(f"/home/{USER}/.jupyter/lab/workspaces")
HUB_LOG = Path("/var/log/dsportal-dev/jupyterhub.out")
VIEWPORT = {"width": 1366, "height": 900}
PORTAL_SERVER_EXTENSION = "spawner.jupyter.extension"


def fresh_workspace() -> None:
    """No workspace of an earlier start: JupyterLab opens with its launcher."""
    shutil.rmtree(WORKSPACES, ignore_errors=True)


EVERY_KERNEL = "every kernel drawn"


def watched_page(browser: Browser) -> tuple[BrowserContext, Page]:
    """A fresh context's page that records when the launcher is drawn, and each set of kernel cards it shows."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(DRAWN_SCRIPT)
    context.add_init_script(KERNEL_CARDS_SCRIPT)
    return context, context.new_page()


def drawn_times(page: Page, kernels: Callable[[], list[str]]) -> dict[str, float]:
    """The browser's marks once the launcher shows a card of every one of `kernels()` (waits for it, in the
    page): its first card drawn, and every kernel's."""
    page.wait_for_function("Boolean(window.__dsportalDrawn)", timeout=120_000, polling=100)
    names = kernels()
    page.wait_for_function(SHOWS_ALL, arg=names, timeout=120_000, polling=100)
    marks = page_marks(page.evaluate(PAGE_TIMES_SCRIPT))
    marks[EVERY_KERNEL] = every_kernel_at(page.evaluate(HISTORY), names)
    return marks


def session_kernels(cluster: Cluster, job_id: str) -> list[str]:
    """The session's kernels: its server's list once the session's log says they are written."""
    log = Path(f"/home/{USER}/.dsportal-session-{job_id}.log")
    wait_until(lambda: "dsportal: kernels: " in log.read_text(errors="replace"), 60, "the session's kernels", 0.1)
    status, listed = cluster.request("GET", f"/user/{USER}/api/kernelspecs")
    assert status == 200, listed
    return display_names(listed)


def portal_start(browser: Browser, cluster: Cluster) -> tuple[float, dict[str, float]]:
    """(seconds from Start to the launcher drawn, the start's marks: hub, session and browser)."""
    fresh_workspace()
    context, page = watched_page(browser)
    browser_support.log_in(page, USER, password_of(USER))
    page.goto(f"{HUB}/hub/spawn/{USER}")
    page.locator("label[for=dsportal-gpus-1]").click()
    clicked = time.time()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(re.compile(rf"/user/{USER}/lab"), timeout=120_000, wait_until="commit")
    job_id = cluster.job_of(USER)
    marks = drawn_times(page, lambda: session_kernels(cluster, job_id))
    context.close()
    marks.update(hub_marks(HUB_LOG.read_text(errors="replace"), USER, job_id))
    marks.update(job_marks(Path(f"/home/{USER}/.dsportal-session-{job_id}.log").read_text(errors="replace")))
    cluster.stop(USER)
    return marks[EVERY_KERNEL] - clicked, {"Start clicked": clicked, **marks}


def without_the_portal(folder: Path) -> Path:
    """A Jupyter config folder (readable by the user) whose page config turns DS Portal's JupyterLab
    extension off."""
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    (folder / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {"dsportal": True}}))
    for path in (folder, folder / "labconfig", folder / "labconfig" / "page_config.json"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def bare_lab(browser: Browser, config: Path) -> tuple[float, dict[str, float]]:
    """(seconds from starting `jupyter lab` as the user until its launcher shows every kernel it offers, the
    start's marks)."""
    fresh_workspace()
    port, token = free_port(), secrets.token_hex(16)
    env = {
        "PATH": f"{VENV}/bin:/usr/bin:/bin",
        "HOME": f"/home/{USER}",
        "USER": USER,
        "LANG": "C.UTF-8",
        "JUPYTER_CONFIG_PATH": str(config),
    }
    argv = [
        *("sudo", "-n", "--preserve-env=" + ",".join(env), "-u", USER, "--", f"{VENV}/bin/jupyter-lab"),
        *("--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}"),
        f"--ServerApp.jpserver_extensions={PORTAL_SERVER_EXTENSION}=False",
    ]
    context, page = watched_page(browser)
    started = time.time()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=f"/home/{USER}")
    try:
        wait_until(
            lambda: answers(f"http://127.0.0.1:{port}/api", proc, "jupyter lab"), 60, "jupyter lab answering", 0.05
        )
        answering = time.time()
        page.goto(f"http://127.0.0.1:{port}/lab?token={token}", wait_until="commit")
        marks = drawn_times(page, lambda: bare_kernels(port, token))
        return marks[EVERY_KERNEL] - started, {"jupyter lab started": started, "API answers": answering, **marks}
    finally:
        context.close()
        proc.terminate()
        proc.wait(10)


def bare_kernels(port: int, token: str) -> list[str]:
    """The kernels a bare `jupyter lab` offers (its environment's and the system's: it writes none of its own)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/kernelspecs", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return display_names(json.load(answer))


def median_run(times: list[float]) -> int:
    """The index of the run whose time is nearest the median."""
    middle = statistics.median(times)
    return min(range(len(times)), key=lambda i: abs(times[i] - middle))


def print_timeline(title: str, marks: dict[str, float]) -> None:
    start = min(marks.values())
    print(f"bench {title}, seconds since the first mark:")
    for mark, since, step in in_order(start, marks):
        print(f"  {mark:<22} {since:6.2f}  (+{step:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    cluster.clean()
    portal, bare = [], []
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-lab-") as folder:
        config = without_the_portal(Path(folder))
        browser = p.chromium.launch(**browser_support.launch_options())
        for _ in range(runs):
            bare.append(bare_lab(browser, config))
            portal.append(portal_start(browser, cluster))
        browser.close()
    portal_times, bare_times = [t for t, _ in portal], [t for t, _ in bare]
    p_, b = statistics.median(portal_times), statistics.median(bare_times)
    first_p = statistics.median(m["launcher drawn"] - m["Start clicked"] for _, m in portal)
    first_b = statistics.median(m["launcher drawn"] - m["jupyter lab started"] for _, m in bare)
    print_timeline(f"portal start, the median run ({portal_times[median_run(portal_times)]:.2f} s)",
                   portal[median_run(portal_times)][1])  # fmt: skip
    print_timeline(f"bare jupyter lab, the median run ({bare_times[median_run(bare_times)]:.2f} s)",
                   bare[median_run(bare_times)][1])  # fmt: skip
    print(
        f"bench launcher drawn with every kernel in Chromium (portal, from Start): median {p_:.2f} s  runs "
        f"{' '.join(f'{x:.2f}' for x in portal_times)}"
    )
    print(
        f"bench launcher drawn with every kernel in Chromium (bare jupyter lab):  median {b:.2f} s  runs "
        f"{' '.join(f'{x:.2f}' for x in bare_times)}"
    )
    print(f"bench ratio portal / bare: {p_ / b:.2f}")
    print(f"bench (its first card drawn: portal {first_p:.2f} s, bare {first_b:.2f} s, ratio {first_p / first_b:.2f})")


if __name__ == "__main__":
    main()

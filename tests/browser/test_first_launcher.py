"""The first launcher of a session on a cold node shows every kernel of the session, and each logo it shows loads.

The session's kernelspecs are written in the background while its server
starts (spawner/job/session/start.py); the server's first kernel list waits
for them (spawner/jupyter/session/kernelspecs.py).  Here the node's page cache
is dropped first (a cold node: the probes of R, the modules and the images are
slow), the session is started from the options form like a person does, and
the page goes to JupyterLab as soon as the hub says ready.  The launcher's
very first set of kernel cards (recorded in the page, tests/support/launcher.py)
must be the session's, as its server lists them once the writer is done.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB
from tests.support.demo import password_of
from tests.support.http import wait_until
from tests.support.launcher import HISTORY, KERNEL_CARDS_SCRIPT, SHOWS_ALL, display_names, first_cards

# the dev cluster to itself (tests/support/lanes.py): drops the machine's page cache (a cold node): every session
# beside it stalls
pytestmark = pytest.mark.alone

USER = "carol"
KERNEL_FILES = re.compile(rf"/user/{USER}/kernelspecs/")


def drop_caches() -> None:
    """A cold node: the page cache, dentries and inodes dropped (root, as the tests run)."""
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def kernels_written(job_id: str) -> bool:
    """The session's log says its kernelspecs writer is done (its last line)."""
    log = Path(f"/home/{USER}/.dsportal-session-{job_id}.log")
    return log.exists() and "dsportal: kernels: " in log.read_text(errors="replace")


def test_the_first_launcher_shows_every_kernel_of_the_session(browser, cluster):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.add_init_script(KERNEL_CARDS_SCRIPT)
    kernel_files: list[tuple[int, str]] = []  # (status, URL) of each kernel's file the page asked for

    def on_response(response) -> None:
        if KERNEL_FILES.search(response.url):
            kernel_files.append((response.status, response.url))

    context.on("response", on_response)
    page = context.new_page()
    log_in(page, USER, password_of(USER))
    page.goto(f"{HUB}/hub/spawn/{USER}")
    page.locator("label[for=dsportal-gpus-1]").click()
    drop_caches()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(re.compile(rf"/user/{USER}/lab"), timeout=120_000, wait_until="commit")
    page.wait_for_function(f"({HISTORY}).length > 0", timeout=120_000, polling=100)

    job_id = cluster.job_of(USER)
    wait_until(lambda: kernels_written(job_id), 60, "the session's kernelspecs written", every=0.2)
    status, listed = cluster.request("GET", f"/user/{USER}/api/kernelspecs")
    assert status == 200, listed
    session_kernels = display_names(listed)
    assert {"Python 3 (demo module)", "Python 3 (container: debian-py)"} <= set(session_kernels)
    # JupyterLab draws each logo the list offers; the cards are all there once those have loaded
    page.wait_for_function(SHOWS_ALL, arg=session_kernels, timeout=30_000, polling=100)
    page.wait_for_load_state("networkidle")

    assert first_cards(page.evaluate(HISTORY)) == session_kernels
    logos = [url for _, url in kernel_files if "/logo-" in url]
    assert logos, "no kernel logo was asked for (the session's Python 3 and R carry the stock ones)"
    assert [(status, url) for status, url in kernel_files if status != 200] == []
    assert (
        page.locator(".jp-LauncherCard img.jp-Launcher-kernelIcon").evaluate_all(
            "icons => icons.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
        )
        == []
    )  # every logo shown is drawn: none broken
    shot(page, "first-launcher", "The first launcher on a cold node: every kernel of the session, with its logo.")
    context.close()  # before the session stops: its page's sockets would fail

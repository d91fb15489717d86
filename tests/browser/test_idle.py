"""An idle session in real Chromium: JupyterLab warns, then the session stops and the hub page says why.

The dev config stops idle `debug` sessions after 30 s and warns 15 s before.
An open JupyterLab tab that nobody touches is no use: its polling does not
keep the session.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, url_for
from tests.support.demo import password_of

# the side lane's people, beside the other tests (tests/support/lanes.py)
pytestmark = pytest.mark.side


def test_jupyterlab_warns_before_an_idle_session_stops(browser, cluster):
    cluster.start("erin", {"partition": "debug", "gpus": 1, "hours": 1})
    cluster.wait_ready("erin")
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    log_in(page, "erin", password_of("erin"))
    page.goto(url_for("/user/erin/lab?reset"))
    # the job's GPU in the status bar (the dev cluster's stand-in driver: idle, 300 MiB held by nothing)
    expect(page.locator(".dsportal-gpu-usage")).to_have_text(re.compile(r"^GPU[0-3] 0% · 0\.3/32 GB$"), timeout=90_000)
    # idle time counts from the session's start; a touch restarts it, so the warning comes a full 15 s before
    # the stop however long this machine took to log in and draw JupyterLab
    page.mouse.move(100, 100)
    page.mouse.move(120, 120)
    expect(
        page.get_by_text(
            re.compile(
                r"Idle for \d+ s; this session will stop in \d+ s to free its GPUs — move the "
                r"mouse or run something to keep it\."
            )
        )
    ).to_be_visible(timeout=90_000)
    shot(
        page,
        "idle-warning",
        "JupyterLab warns before an idle session stops; the job's GPU in the status bar.",
        within=".dsportal-gpu-usage",
    )
    assert cluster.server("erin"), "the warning comes before the stop"
    browser.allow(
        r"^https://erin\.localhost:8000/|^https://localhost:8000/hub/user/erin/",
        why="the idle session stops under the open page",
    )
    cluster.wait(lambda: cluster.server("erin") is None, 120, "the idle session stopped")
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-ended")).to_contain_text("because nothing used it")
    expect(page.locator("#dsportal-history li").first).to_contain_text("because nothing used it")
    shot(page, "idle-stopped", "The home page after the idle stop: why it ended.")
    context.close()

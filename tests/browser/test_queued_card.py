"""A queued session's card in real Chromium on the dev cluster: what it says, its buttons, no barrier.

alice and bob hold all 8 sxm2 GPUs; carol's session waits for Resources.  Her home page shows the card of a
queued session (why it waits, its place in line, Progress and Cancel), checked by axe-core like every page
(tests/support/browser.py `shot`, tests/support/a11y.py).  The hub's side of the same queue is
tests/integration/test_cluster.py's.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB
from tests.support.demo import password_of

pytestmark = pytest.mark.alone  # needs all 8 GPUs: a third session waits for Resources


def test_a_queued_sessions_card_says_why_it_waits_and_offers_cancel(browser, cluster):
    cluster.start("alice", {"gpus": 4})
    cluster.start("bob", {"gpus": 4})
    cluster.wait_ready("alice")
    cluster.wait_ready("bob")
    cluster.start("carol", {"gpus": 4})
    job = cluster.job_of("carol")
    cluster.wait(lambda: cluster.jobs("carol")[job]["reason"] == "Resources", 60, "carol's session queued")

    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    log_in(page, "carol", password_of("carol"))
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state")).to_have_text("queued")
    expect(page.locator("#dsportal-session-line")).to_contain_text(f"Job {job} is queued on sxm2")
    expect(page.get_by_role("button", name="Cancel")).to_have_count(1)
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    shot(page, "home-queued", "A queued session's card: why it waits, its place in line, Progress and Cancel.")

    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#dsportal-state")).to_have_text("not running", timeout=60_000)
    cluster.wait(lambda: job not in cluster.jobs("carol"), 30, "carol's queued job cancelled")
    page.context.close()

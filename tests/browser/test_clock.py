"""A session at its time limit, in real Chromium on the dev cluster: the clock, the warning, the saved edit.

The session lasts 3 minutes; the warning before its end shows what it used
so far, once the session has read its GPU often enough to judge.  JupyterLab's
own autosave is off, so only the portal's saving before the end (Slurm's
warning signal, the JupyterLab extension) can put the edit on disk.  Once it
has, the page goes to the hub's home page, and the session ends there: what
the user sees after the end is the home page's account of it, not whatever a
JupyterLab page makes of a server that went away.

The test races nothing but the real time limit: it types the edit as soon as
JupyterLab shows the notebook (the portal saves every 20 s in the last 2
minutes, so an edit typed early is saved well before the end), waits for the
saving until Slurm's end time rather than for a fixed number of seconds, and
waits for the session it starts again to be running before it ends (a stop of
a start still under way is another test's subject).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, url_for
from tests.support.demo import password_of
from tests.support.http import wait_until
from tests.support.slurmclock import before_the_end, seconds_left

# the side lane's people, beside the other tests (tests/support/lanes.py)
pytestmark = pytest.mark.side

NOTEBOOK = "clock-test.ipynb"
EDIT = "# typed 3 minutes before the end, never saved by hand"


def test_an_unsaved_edit_is_saved_before_the_time_limit_and_the_hub_says_why(browser, cluster):
    home = Path("/home/frank")
    cluster.start("frank", {"gpus": 1, "hours": 0.05})  # 3 minutes
    cluster.wait_ready("frank")
    job_id = cluster.job_of("frank")
    assert "TimeLimit=00:03:00" in cluster.scontrol(job_id)
    # JupyterLab's autosave off for frank; a notebook to edit
    status, _ = cluster.request(
        "PUT", "/user/frank/lab/api/settings/@jupyterlab/docmanager-extension:plugin", {"raw": '{"autosave": false}'}
    )
    assert status == 204
    notebook = {
        "cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], "execution_count": None}],
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    }
    status, _ = cluster.request(
        "PUT", f"/user/frank/api/contents/{NOTEBOOK}", {"type": "notebook", "format": "json", "content": notebook}
    )
    assert status in (200, 201)

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    log_in(page, "frank", password_of("frank"))
    # the home page's card while the session runs: its facts, the time left and the buttons that apply
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state")).to_have_text("running")
    facts = page.locator("#dsportal-facts")
    expect(facts).to_contain_text(f"Job{job_id}")
    expect(facts).to_contain_text("GPUs1")
    expect(facts).to_contain_text("Cores8")
    expect(facts).to_contain_text("Memory48 GB")
    expect(facts).to_contain_text(re.compile(r"Time left[1-3] min"))
    expect(page.locator("#dsportal-open")).to_be_visible()
    expect(page.locator("#dsportal-stop")).to_be_visible()
    expect(page.locator("#dsportal-extend")).to_have_text("Add 1 h")
    shot(
        page,
        "clock-home-running",
        "frank's home page while his 3-minute session runs: facts, time left, Open, Stop, Add 1 h.",
    )
    page.goto(url_for(f"/user/frank/lab/tree/{NOTEBOOK}?reset"))
    # the time left, from Slurm's end time; the warning (5 minutes before the end: it is already less)
    expect(page.locator(".dsportal-time-left")).to_have_text(re.compile(r"^Time left: [1-3] min$"), timeout=90_000)
    expect(page.get_by_text(re.compile(r"Your session ends in [1-3] min, at [0-9]{2}:[0-9]{2}"))).to_be_visible()

    # an edit, typed at once (the saving before the end is what the test races, not the checks below)
    editor = page.locator(".jp-Cell .cm-content").first
    expect(editor).to_have_text("x = 1")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  " + EDIT)
    expect(page.locator(".jp-mod-dirty").first).to_be_attached()
    shot(
        page,
        "clock-unsaved-edit",
        "JupyterLab minutes before the time limit: the time left, the warning, an unsaved edit.",
        within=".dsportal-time-left",
    )
    # not saved by hand, nor by JupyterLab's autosave: on disk only once the portal's own saving (every 20 s in
    # the last 2 minutes, which may fall just after the typing) has logged that it saved it
    saved_line = f"dsportal: saved before the time limit: {NOTEBOOK}"
    session_log = home / f".dsportal-session-{job_id}.log"
    wait_until(
        lambda: EDIT not in (home / NOTEBOOK).read_text() or saved_line in session_log.read_text(),
        10,
        "the edit on disk only through the portal's saving",
    )

    # what it used so far: its one GPU sat idle (the stand-in NVML reads 0 %), and what to ask for next time,
    # once the session has read it often enough to judge (before, its advice says it is too short to judge) and
    # has read its GPU (a session whose NVML has not answered yet has no GPU to judge)
    def judged():
        status, summary = cluster.request("GET", "/user/frank/dsportal/session/usage")
        ready = status == 200 and summary["gpus"] and not summary["advice"].startswith("Too short to judge")
        return ready and summary

    summary = cluster.wait(judged, 60, "enough readings of frank's GPU to judge it")
    assert summary["advice"] == "Your GPU did no work; next time ask for 0 GPUs, or check that your code uses CUDA.", (
        summary
    )
    page.get_by_role("button", name="What it used").first.click()
    used = page.locator(".dsportal-usage-so-far")
    expect(used).to_contain_text(re.compile(r"GPU [0-3]: 0% on average, peak 0%"))
    expect(used).to_contain_text("Your GPU did no work; next time ask for 0 GPUs")
    shot(
        page,
        "clock-usage-so-far",
        "JupyterLab near the end: what the session used so far, and the advice",
        within=".dsportal-usage-so-far",
    )
    page.get_by_role("button", name="Ok", exact=True).click()
    # no "get notified about official Jupyter news?" question (sessions.jupyterlab_news is off)
    expect(page.get_by_text(re.compile("official Jupyter news"))).to_have_count(0)

    before_the_end(job_id, lambda: saved_line in session_log.read_text(), "the portal's saving before the time limit")
    left = seconds_left(job_id)
    assert EDIT in (home / NOTEBOOK).read_text()
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)  # nothing left unsaved: leaving asks nothing

    # the user goes home before the end, and sees the session end there
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state")).to_have_text("running")
    assert cluster.server("frank") is not None, f"the session ended before the page left JupyterLab ({left:.0f} s left)"
    cluster.wait(lambda: cluster.server("frank") is None, 300, "the time limit reached and noticed")
    saved = json.loads((home / NOTEBOOK).read_text())
    assert EDIT in "".join(saved["cells"][0]["source"])
    log = (home / f".dsportal-session-{job_id}.log").read_text()
    assert "dsportal: Slurm's warning: the time limit is 2 min away or less" in log
    assert f"dsportal: saved before the time limit: {NOTEBOOK}" in log
    assert re.search(r"Shutting down [1-9][0-9]* kernels?", log)  # kernels shut down cleanly at the end

    # the open home page follows the end (it asks the hub again every 10 s)
    expect(page.locator("#dsportal-ended")).to_have_text(
        re.compile(r"Your session reached its time limit \(3 min\) at [0-9]{2}:[0-9]{2}\.")
    )
    expect(page.locator("#dsportal-state")).to_have_text("not running")
    expect(page.locator("#dsportal-history li").first).to_contain_text(
        re.compile(
            rf"1 GPU · 8 cores · 48 GB RAM · 3 min on sxm2 \(job {job_id}\)\. Your session reached its time limit"
        )
    )
    expect(page.get_by_role("button", name="Start again with the same settings")).to_be_visible()
    shot(page, "clock-ended", "frank's home page after the time limit: why it ended, the history, start again.")
    context.close()

    phone = browser.new_context(viewport={"width": 390, "height": 844})
    page = phone.new_page()
    log_in(page, "frank", password_of("frank"))
    page.goto(f"{HUB}/hub/home")
    for part in ("#dsportal-session", "#dsportal-again", "#dsportal-history"):
        # None while the page draws the part anew (its data comes after the load event; the card is redrawn)
        box = wait_until(lambda part=part: page.locator(part).bounding_box(), 10, f"{part} drawn")
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, part  # the dashboard fits a phone's width
    shot(page, "home-phone", "The home page at a phone's width.")
    # one click on the ended session's Start again starts it again (the form's POST with the XSRF token; links
    # never start one): the big button sends the newest session's settings the same way
    page.locator("#dsportal-history li").first.get_by_role(
        "button", name=re.compile(r"Start again with the settings of job \d+")
    ).click()
    page.wait_for_url(re.compile(r"/hub/spawn-pending/frank|/user/frank/"), timeout=60_000)
    job = cluster.job_of("frank")
    assert "TimeLimit=00:03:00" in cluster.scontrol(job) and "gpu" in cluster.scontrol(job)
    phone.close()
    # running before the test ends: the teardown's stop then stops a session, not a start it would cut short
    cluster.wait_ready("frank")

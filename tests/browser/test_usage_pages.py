"""The usage pages in real Chromium on the dev cluster: plotly.js draws the hub's figures.

carol, an admin, opens the cluster's status page while alice's 1-GPU session
runs: the GPUs now allocated and free per partition (from real Prometheus,
which scrapes the hub) match what Slurm's sinfo says, and every plot is
drawn.  alice opens her usage page (GPU-hours from real slurmdbd) and gets a
403 with words on the status page.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from playwright.sync_api import expect

from spawner.slurmgres import gpu_count
from tests.support.browser import log_in, shot
from tests.support.cluster import HUB
from tests.support.demo import password_of

# the dev cluster to itself (tests/support/lanes.py): compares the status page with the whole cluster's sinfo
pytestmark = pytest.mark.alone

STATUS_PLOTS = ("gpus", "queue", "waits", "sessions", "culled", "users")


def slurm_gpus(partition: str) -> dict[str, int]:
    """{"allocated", "free"} GPUs of the partition's nodes, as sinfo reports them (every dev node is up)."""
    out = subprocess.run(
        ["sinfo", "-h", "-N", "-p", partition, "-O", "NodeHost:20,Gres:30,GresUsed:40"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    total = used = 0
    for line in out.splitlines():
        _, gres, gres_used = line.split()
        total += gpu_count(gres)  # typed: 'gpu:v100:4(S:0-1)'
        used += gpu_count(gres_used)
    return {"allocated": used, "free": total - used}


def gpus_on_page(page, partition: str) -> dict[str, int]:
    row = page.locator(f'#dsportal-gpus-now tr[data-partition="{partition}"]')
    return {state: int(row.locator(f"td.{state}").inner_text()) for state in ("allocated", "free")}


def test_the_status_page_draws_its_plots_with_slurms_numbers_and_alice_sees_her_usage(browser, cluster):
    # Slurm 22.05 can leave a GPU counted as allocated on a typed node after slurmctld's restart (the soak's fault;
    # slurmctld.log: "gres count underflow"): alice's session counts from what Slurm said before it
    before = slurm_gpus("sxm2")
    cluster.start("alice", {"partition": "sxm2", "gpus": 1, "hours": 1})
    cluster.wait_ready("alice")
    slurm = slurm_gpus("sxm2")
    assert slurm["allocated"] == before["allocated"] + 1

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    carol = context.new_page()
    log_in(carol, "carol", password_of("carol"))
    expect(carol.get_by_role("link", name="Cluster status")).to_be_visible()

    def matches() -> bool:  # the hub reads the cluster every 5 s, Prometheus scrapes every 5 s
        carol.goto(f"{HUB}/hub/dsportal/status")
        return gpus_on_page(carol, "sxm2") == slurm

    cluster.wait(matches, 60, "the status page's GPUs matching sinfo's")
    for name in STATUS_PLOTS:
        expect(carol.locator(f"#dsportal-plot-{name} .main-svg").first).to_be_attached()
    expect(carol.locator("#dsportal-plot-gpus .legendtext", has_text="sxm2 allocated")).to_be_attached()
    shot(carol, "status-24h", "carol's cluster status: alice's 1 GPU allocated on sxm2, as Slurm says, and the plots")
    carol.click("text=7d")
    expect(carol).to_have_url(re.compile(r"range=7d"))
    expect(carol.locator("#dsportal-plot-gpus .main-svg").first).to_be_attached()
    shot(carol, "status-7d", "the same over 7 days")

    alice = context.browser.new_context(viewport={"width": 1366, "height": 900})
    browser.problems.watch(alice)
    browser.contexts.append(alice)
    page = alice.new_page()
    log_in(page, "alice", password_of("alice"))
    page.goto(f"{HUB}/hub/home")
    expect(page.get_by_role("link", name="Usage", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Cluster status")).to_have_count(0)
    page.get_by_role("link", name="Usage", exact=True).click()
    expect(page.locator("#dsportal-week")).to_have_text(re.compile(r"^[0-9.]+$"))
    expect(page.locator("#dsportal-plot-daily .main-svg").first).to_be_attached()
    expect(page.locator("#dsportal-plot-efficiency .main-svg").first).to_be_attached()
    shot(page, "usage", "alice's usage: GPU-hours this week and month from Slurm, per day, and efficiency over time")

    browser.allow(r"/hub/dsportal/status$", 403, why="alice is no admin: the status page refuses her")
    response = page.goto(f"{HUB}/hub/dsportal/status")
    assert response.status == 403
    expect(page.get_by_text("The cluster's status page is for the portal's admins.", exact=True)).to_be_visible()
    shot(page, "status-refused", "alice, no admin, is refused the status page with words", errors_expected=True)

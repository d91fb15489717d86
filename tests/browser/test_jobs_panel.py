"""Run as a job, the jobs panel and the home page's jobs, in real Chromium on the dev cluster.

alice, in her JupyterLab session, right-clicks a notebook, changes a parameter in
the dialog, first asks for too many nodes (the hub's words in the dialog, her
values kept, nothing submitted), then submits; the Jobs panel follows the job to
its end, shows the log and the end's notification; the home page lists it.
"""

from __future__ import annotations

import json
import re
import subprocess

from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, url_for
from tests.support.demo import password_of
from tests.support.jobs import JobsClient

NOTEBOOK = "jobs-demo/train.ipynb"


def test_a_notebook_runs_as_a_job_from_jupyterlab_and_the_panel_follows_it(browser, cluster):
    alice = JobsClient.for_user("alice")
    alice.put_notebook(
        NOTEBOOK,
        ["print(f'training {name} with lr={lr} for {epochs} epochs')"],
        "lr = 0.01  # learning rate\nepochs = 2  # passes over the data\nname = 'baseline'\n",
    )
    cluster.start("alice", {"gpus": 0, "hours": 1})
    cluster.wait_ready("alice")
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    log_in(page, "alice", password_of("alice"))
    page.goto(url_for("/user/alice/lab/tree/jobs-demo?reset"))
    item = page.locator('.jp-DirListing-item[title*="train.ipynb"]').first
    expect(item).to_be_visible(timeout=60_000)
    item.click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Run as a job…").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog.locator('[name="param-lr"]')).to_have_value("0.01")
    dialog.locator('[name="param-name"]').fill("from-the-browser")
    dialog.locator('[name="param-lr"]').fill("0.5")
    dialog.locator('[name="hours"]').fill("0.25")
    # the choices Slurm and the admin give: sxm2's two GPU types, alice's two accounts, the offered QOS
    expect(dialog.locator('[name="gpu_type"] option')).to_have_text(
        ["Any type: whichever is free first", "A100 80 GB", "V100 32 GB"]
    )
    expect(dialog.locator('[name="account"] option')).to_have_text(["vision (your default)", "nlp"])
    dialog.locator('[name="account"]').select_option("nlp")
    dialog.locator('[name="qos"]').select_option("short")
    shot(
        page,
        "jobs-run-dialog",
        "JupyterLab's Run as a job dialog: partition, nodes, GPUs, hours, GPU type, Slurm account, QOS, the typed "
        "parameters.",
        within=".jp-Dialog-body",
    )

    # a refusal: 5 GPUs per node, past the dialog's own bound (a script could ask so too): the hub says why
    dialog.locator('[name="gpus"]').evaluate("(e) => { e.max = '99'; e.value = '5'; }")  # past the form's own bound
    before = set(alice.rows())
    browser.allow(r"/user/alice/dsportal/runs\?", 400, why="the test asks for 5 GPUs per node: the hub refuses")
    dialog.locator(".jp-Dialog-footer .jp-mod-accept").click()
    expect(page.locator(".dsportal-run-error")).to_contain_text("gpus: 5 is out of range", timeout=30_000)
    expect(page.locator('.jp-Dialog [name="param-name"]')).to_have_value("from-the-browser")
    shot(
        page,
        "jobs-run-refused",
        "The hub refused 5 GPUs per node: its words in the dialog, every value kept.",
        within=".jp-Dialog-body",
    )
    assert set(alice.rows()) == before  # nothing submitted
    page.locator('.jp-Dialog [name="gpus"]').fill("0")
    page.locator(".jp-Dialog .jp-Dialog-footer .jp-mod-accept").click()
    expect(page.get_by_text(re.compile(r"Job [0-9]+ submitted"))).to_be_visible(timeout=30_000)
    job_id = re.search(
        r"Job ([0-9]+) submitted", page.get_by_text(re.compile(r"Job [0-9]+ submitted")).first.inner_text()
    ).group(1)

    page.locator('.jp-SideBar [data-id="dsportal-jobs"]').click()
    row = page.locator(f'.dsportal-job[data-job-id="{job_id}"]')
    expect(row).to_be_visible(timeout=30_000)
    expect(row).to_have_attribute("data-state", "COMPLETED", timeout=120_000)
    expect(row.locator(".dsportal-job-why")).to_have_text("Completed.", timeout=30_000)
    row.locator('[data-action="log"]').click()
    expect(row.locator(".dsportal-job-log")).to_contain_text("dsportal-run: done", timeout=30_000)
    expect(page.get_by_text(re.compile(r"Completed")).first).to_be_visible()
    shot(
        page,
        "jobs-panel-completed",
        "The Jobs panel: alice's job completed, its log's tail, the end's notification.",
        within="#dsportal-jobs",
    )

    charged = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-j", job_id, "--format=Account,QOS"], capture_output=True, text=True, timeout=30
    ).stdout.strip()
    assert charged == "nlp|short", charged  # the dialog's account and QOS, kept through the refusal

    output = alice.home / f"jobs/train-{job_id}.ipynb"
    printed = [o for c in json.loads(output.read_text())["cells"] for o in c.get("outputs", [])]
    assert any("training from-the-browser with lr=0.5 for 2 epochs" in "".join(o.get("text", "")) for o in printed)

    page.goto(f"{HUB}/hub/home")
    home_row = page.locator(f'#dsportal-jobs .dsportal-job[data-job-id="{job_id}"]')
    expect(home_row).to_contain_text("Completed.", timeout=30_000)
    with page.expect_download() as saving:  # the run's receipt, from its row
        home_row.get_by_role("button", name=f"Download the receipt of job {job_id}").click()
    receipt = json.loads(open(saving.value.path()).read())
    assert (receipt["kind"], receipt["path"], receipt["request"]["hours"]) == ("run", NOTEBOOK, 0.25), receipt
    assert receipt["environment"]["kernels"] == [{"name": "python3"}]
    expect(page.locator("#dsportal-notify-note")).to_have_text("to alice@dsportal.test")
    shot(page, "jobs-home", "The home page's Your jobs: the run's end in words, Run again, the e-mail opt-in.")
    context.close()

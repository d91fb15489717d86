"""A 3-minute session continued in a new job, in a real browser on the dev cluster.

grace trains a small torch model in a notebook of her 3-minute session (one stand-in GPU), holding a socket too.
Before the end she presses the home page's "Continue in a new job": the card says what was carried, and the page
takes her into the new job's JupyterLab once it answers.  Her notebook opens again, JupyterLab says what it took
back, and the model's predictions in the new kernel equal those the old kernel wrote down; the socket is named as
not carried.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, url_for
from tests.support.demo import password_of

pytestmark = pytest.mark.side

NOTEBOOK = "carry/model.ipynb"
TRAIN = """import socket, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 4), torch.randn(64, 2)
for _ in range(20):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
before = model(x).tolist()
link = socket.socket()
print("trained", round(before[0][0], 6))"""
CHECK = "print('same predictions:', model(x).tolist() == before)"


def notebook(*sources: str) -> dict:
    cells = [
        {"cell_type": "code", "source": s, "metadata": {}, "outputs": [], "execution_count": None, "id": f"c{i}"}
        for i, s in enumerate(sources)
    ]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernel}}


def run_all(page) -> None:
    """Run every cell of the open notebook, once its kernel is up (the status bar says so)."""
    expect(page.locator("#jp-main-statusbar").get_by_text(re.compile(r"^Python 3 \| Idle$"))).to_be_visible(
        timeout=90_000
    )
    page.get_by_role("menuitem", name="Run").click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def test_a_three_minute_session_continues_in_a_new_job_with_its_model(browser, cluster):
    cluster.start("grace", {"partition": "sxm2", "gpus": 1, "hours": 0.05})  # 3 minutes
    cluster.wait_ready("grace")
    old_job = cluster.job_of("grace")
    assert "TimeLimit=00:03:00" in cluster.scontrol(old_job)
    status, _ = cluster.request("PUT", "/user/grace/api/contents/carry", {"type": "directory"})
    assert status in (200, 201)
    status, _ = cluster.request(
        "PUT",
        f"/user/grace/api/contents/{NOTEBOOK}",
        {"type": "notebook", "format": "json", "content": notebook(TRAIN, CHECK)},
    )
    assert status in (200, 201)

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    log_in(page, "grace", password_of("grace"))
    page.goto(url_for(f"/user/grace/lab/tree/{NOTEBOOK}?reset"))
    run_all(page)
    outputs = page.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text="same predictions: True")).to_be_visible(timeout=90_000)
    trained = re.search(r"trained (-?[0-9.]+)", " ".join(outputs.all_inner_texts())).group(1)
    page.keyboard.press("Control+s")  # saved: the new session opens it with its outputs

    # the home page continues it: a confirmation, then the card says what was carried
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state")).to_have_text("running")
    shot(page, "continue-home", "grace's 3-minute session on her home page, with Continue in a new job.")
    page.once("dialog", lambda dialog: dialog.accept())
    asked = time.monotonic()
    page.locator("#dsportal-continue").click()
    expect(page.locator("#dsportal-continued")).to_have_text(
        f"Continued from job {old_job}: 1 notebook(s): 5 variable(s) carried, 1 not.", timeout=60_000
    )
    shot(page, "continue-carried", "The card of the new job starting says what the old one carried.")

    # the page takes her into the new job's JupyterLab once it answers, which opens her notebook again (her
    # workspace, in her home); JupyterLab says, once, what the notebook's new kernel took back
    page.wait_for_url(re.compile(r".*/user/grace/lab.*"), timeout=120_000)
    new_job = cluster.job_of("grace")
    assert new_job != old_job and "TimeLimit=00:03:00" in cluster.scontrol(new_job)
    expect(page.locator(".jp-NotebookPanel").filter(has_text="same predictions")).to_be_visible(timeout=60_000)
    note = page.get_by_text(f"Continued from job {old_job}: 5 variables back in 1 notebook, 1 not (link: a socket")
    expect(note).to_be_visible(timeout=90_000)
    print(f"hand-over in the browser: {time.monotonic() - asked:.1f} s from the click to JupyterLab's word")
    page.wait_for_timeout(1000)  # the toast slides in: the picture once it is in place
    shot(page, "continue-lab", "The new job's JupyterLab: the notebook again, and what it took back.")

    # the new kernel holds the trained model: its predictions equal those the old kernel wrote down
    checked = page.locator(".jp-Cell").nth(1)
    checked.click()
    page.keyboard.press("Shift+Enter")
    expect(checked.locator(".jp-OutputArea-output")).to_have_text("same predictions: True", timeout=60_000)
    status, said = cluster.request("GET", "/user/grace/dsportal/continuation")
    assert status == 200 and said["continued_from"] == old_job, said
    assert said["restored"][NOTEBOOK]["carried"] == 5, json.dumps(said)
    assert trained  # the old kernel's first prediction, shown in the reopened notebook's saved output
    expect(outputs.filter(has_text=f"trained {trained}")).to_be_visible()
    context.close()

"""A sweep from JupyterLab, in real Chromium on the dev cluster: the PyTorch MNIST template over a 2 x 3 grid.

erin opens the template's "Run as a job…" dialog, turns the sweep on, gives
learning_rate two values and batch_size three (epochs 1, on scikit-learn's
digits), reads "6 runs" before submitting, then follows the one sweep row of the
Jobs panel: its "Table" button opens the sweep in a main-area tab of its own,
whose table fills live until the six tasks have completed; she sorts it by a
result, plots that result against learning_rate, and makes the best task's
parameters the defaults of a copy of the notebook, which opens; the button again
shows the sweep's one tab.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import ROOT, url_for
from tests.support.demo import password_of
from tests.support.jobs import JobsClient

# the side lane's people, beside the other tests (tests/support/lanes.py)
pytestmark = pytest.mark.side

FOLDER = "sweeps-demo"
NOTEBOOK = f"{FOLDER}/pytorch-mnist.ipynb"
TEMPLATE = ROOT / "notebooks" / "pytorch-mnist.ipynb"
TASKS_DONE_S = 900  # six one-epoch runs on the digits, some at once, queue time included


def parameters_cell(path) -> str:
    notebook = json.loads(path.read_text())
    [cell] = [c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    return "".join(cell["source"])


def test_a_sweep_runs_from_the_dialog_and_its_table_and_plot_follow_it(browser, cluster):
    erin = JobsClient.for_user("erin")
    subprocess.run(["runuser", "-u", "erin", "--", "rm", "-rf", "--", str(erin.home / FOLDER)], check=True, timeout=30)
    erin.write(NOTEBOOK, TEMPLATE.read_text())
    cluster.start("erin", {"gpus": 0, "hours": 1})
    cluster.wait_ready("erin")
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    log_in(page, "erin", password_of("erin"))
    page.goto(url_for(f"/user/erin/lab/tree/{FOLDER}?reset"))
    item = page.locator('.jp-DirListing-item[title*="pytorch-mnist.ipynb"]').first
    expect(item).to_be_visible(timeout=60_000)
    item.click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Run as a job…").click()

    # the dialog: the sweep switch, a list for each of two parameters, single values for the rest
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("switch", name="Sweep").check()
    dialog.get_by_label("How learning_rate varies").select_option("list")
    dialog.get_by_label("Values of learning_rate").fill("0.001, 0.01")
    dialog.get_by_label("How batch_size varies").select_option("list")
    dialog.get_by_label("Values of batch_size").fill("32, 64, 128")
    dialog.locator('[name="param-epochs"]').fill("1")
    dialog.locator('[name="param-log_every"]').fill("1000")
    dialog.locator('[name="param-data_path"]').fill(str(erin.home / FOLDER / "no-mnist.npz"))  # the digits instead
    dialog.locator('[name="gpus"]').fill("0")
    dialog.locator('[name="hours"]').fill("0.25")
    count = dialog.get_by_role("status", name="Runs in the sweep")
    expect(count).to_have_attribute("data-tasks", "6")
    expect(count).to_have_text("6 runs, no GPU")
    expect(dialog.locator(".dsportal-sweep-over")).to_be_hidden()
    count.scroll_into_view_if_needed()  # the lists and the count in the picture, not the fields above them
    shot(
        page,
        "sweep-dialog",
        "Run as a job with the sweep on: learning_rate 0.001, 0.01 x batch_size 32, 64, 128; the dialog counts 6 "
        "runs before submitting.",
        within=".jp-Dialog-body",
    )
    dialog.locator(".jp-Dialog-footer .jp-mod-accept").click()
    submitted = page.get_by_text(re.compile(r"Sweep [0-9]+ submitted: 6 runs")).first
    expect(submitted).to_be_visible(timeout=30_000)
    sweep_id = re.search(r"Sweep ([0-9]+) submitted", submitted.inner_text()).group(1)

    # the Jobs panel: one row for the whole sweep, with its progress; its table opens in a tab of its own
    page.locator('.jp-SideBar [data-id="dsportal-jobs"]').click()
    row = page.locator(f'.dsportal-job[data-job-id="{sweep_id}"]')
    expect(row).to_be_visible(timeout=30_000)
    expect(page.locator(f'.dsportal-job[data-job-id^="{sweep_id}_"]')).to_have_count(0)  # never a row per task
    expect(row.locator(".dsportal-job-id")).to_have_text(f"{sweep_id} · sweep")
    expect(row.locator(".dsportal-sweep-progress")).to_be_visible()
    table_button = row.get_by_role("button", name=f"Table of sweep {sweep_id}")
    expect(table_button).to_have_text("Table")
    table_button.click()
    tab_title = f"Sweep {sweep_id}: pytorch-mnist.ipynb"
    expect(page.get_by_role("tab", name=re.compile(re.escape(tab_title)))).to_be_visible(timeout=30_000)
    sweep = page.locator(f"#dsportal-sweep-{sweep_id}").get_by_role("region", name=f"Tasks of sweep {sweep_id}")
    expect(sweep).to_be_visible()
    expect(row.locator(".dsportal-sweep")).to_have_count(0)  # the table is in the tab, not in the panel
    expect(sweep.locator(".dsportal-sweep-words")).to_contain_text("6 tasks")
    table = sweep.get_by_role("table", name=f"Tasks of sweep {sweep_id}")
    expect(table.locator("tbody tr.dsportal-sweep-task")).to_have_count(6, timeout=60_000)
    # room for every column: each parameter's header, and each line's buttons, in view without scrolling
    for header in ("Sort by Task", "Sort by learning_rate", "Sort by batch_size", "Sort by State", "Sort by Time"):
        expect(table.get_by_role("button", name=header)).to_be_in_viewport()
    first_buttons = table.locator("tbody tr.dsportal-sweep-task").first.locator(".dsportal-sweep-actions button")
    expect(first_buttons.first).to_be_in_viewport()
    shot(
        page,
        "sweep-table-live",
        "The sweep in its own tab while its tasks run, wait or are done.",
        within=".dsportal-sweep-view",
    )

    # the table follows the tasks to their end (it reads them every few seconds while it is open)
    completed = table.locator('tbody tr.dsportal-sweep-task[data-state="COMPLETED"]')
    expect(completed).to_have_count(6, timeout=TASKS_DONE_S * 1000)
    expect(page.get_by_text(re.compile(rf"Sweep {sweep_id} \(.*\) ended\.")).first).to_be_visible(timeout=60_000)
    result_header = table.locator("th.dsportal-sweep-col-result").first
    expect(result_header).to_be_visible(timeout=60_000)  # the template's results cell
    result = result_header.get_attribute("data-column").removeprefix("result:")
    expect(table.locator("tbody tr.dsportal-sweep-best")).to_have_count(1)
    expect(sweep.locator(".dsportal-sweep-best-words")).to_contain_text(f"Best {result}")
    expect(sweep.locator(".dsportal-sweep-words")).to_contain_text("6 tasks")

    # sorted by the result: twice for the other order, missing values (none here) last
    sort = table.get_by_role("button", name=f"Sort by {result}")
    sort.click()
    expect(table.locator(f'th[data-column="result:{result}"]')).to_have_attribute("aria-sort", "ascending")
    sort.click()
    expect(table.locator(f'th[data-column="result:{result}"]')).to_have_attribute("aria-sort", "descending")
    cells = table.locator(f'tbody td[data-column="result:{result}"]').all_inner_texts()
    values = [float(text) for text in cells]
    assert values == sorted(values, reverse=True), values
    shot(
        page,
        "sweep-table-sorted",
        f"The six completed tasks sorted by {result}, highest first; the best one marked.",
        within=".dsportal-sweep-view",
    )

    # the plot: the result against learning_rate, a point per task, at a size to read
    sweep.get_by_label("Result to plot").select_option(result)
    sweep.get_by_label("Parameter to plot against").select_option("learning_rate")
    plot = sweep.get_by_role("img", name=f"{result} against learning_rate")
    expect(plot).to_be_visible()
    box = plot.bounding_box()
    assert box and box["width"] >= 400 and box["height"] >= 250, box
    expect(plot.locator("circle.dsportal-sweep-point")).to_have_count(6)
    expect(plot.locator("circle.dsportal-sweep-point-best")).to_have_count(1)
    plot.locator("circle.dsportal-sweep-point").first.hover()
    shot(
        page,
        "sweep-plot",
        f"{result} against learning_rate: a point per task, the best one in another colour.",
        within=".dsportal-sweep-view",
    )

    # the best task's parameters as the defaults of a copy of the notebook, which opens
    sweep.get_by_role("button", name="Make best the notebook’s defaults").click()
    notice = page.get_by_text(re.compile(r"pytorch-mnist-best(-\d+)?\.ipynb is a copy of .*pytorch-mnist\.ipynb"))
    expect(notice.first).to_be_visible(timeout=30_000)
    copy_name = re.search(r"(pytorch-mnist-best(-\d+)?\.ipynb)", notice.first.inner_text()).group(1)
    expect(page.get_by_role("tab", name=re.compile(re.escape(copy_name)))).to_be_visible(timeout=30_000)
    copied = parameters_cell(erin.home / FOLDER / copy_name)
    assert re.search(r"^epochs = 1\b", copied, re.M), copied
    assert re.search(r"^learning_rate = 0\.0?01\b", copied, re.M), copied
    assert re.search(r"^batch_size = (32|64|128)\b", copied, re.M), copied
    shot(page, "sweep-best-defaults", "The best task's parameters written into a copy of the notebook, opened.")

    # the row's button again: the sweep's one tab comes back to the front, never a second one
    table_button.click()
    expect(sweep).to_be_visible()
    expect(page.locator(f"#dsportal-sweep-{sweep_id}")).to_have_count(1)
    expect(page.get_by_role("tab", name=re.compile(re.escape(tab_title)))).to_have_count(1)
    context.close()

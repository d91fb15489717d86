"""The user journey of the reference guide's section 4, in real Chromium against the dev cluster.

Playwright for Python drives Debian's /usr/bin/chromium (headless).  Each step
asserts on what the page shows and saves a screenshot into the artifacts
folder, which the test run names at the end.
"""

from __future__ import annotations

import re
import subprocess

from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, url_for

def test_login_page_at_phone_width(browser, cluster):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(HUB)
    expect(page.get_by_text("Log in with your cluster username and password.")).to_be_visible()
    expect(page.get_by_label("Username:")).to_be_visible()
    expect(page.get_by_label("Password:", exact=True)).to_be_visible()
    box = page.locator("#username_input").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390  # fits the screen
    shot(page, "login-phone")
    context.close()


def test_the_journey(browser, cluster):
    alice = browser.new_context(viewport={"width": 1366, "height": 900})
    page = alice.new_page()
    page.set_default_timeout(60_000)

    # 1. the login page; a wrong password is a plain error
    page.goto(HUB)
    expect(page).to_have_title(re.compile("DS Portal"))
    expect(page.get_by_text("Log in with your cluster username and password.")).to_be_visible()
    shot(page, "login")
    log_in(page, "alice", "not-her-password")
    expect(page.locator(".login_error")).to_have_text("Invalid username or password")
    shot(page, "login-wrong-password")

    # 2. log in -> the server page -> Start My Server -> the options form
    log_in(page, "alice", "alice-pw")
    page.goto(f"{HUB}/hub/home")
    shot(page, "server-page")
    page.get_by_role("button", name="Start My Server").click()
    expect(page.get_by_role("heading", name="Start your session")).to_be_visible()
    expect(page.get_by_label("Partition")).to_have_value("sxm2")
    page.locator("label[for=dsportal-gpus-2]").click()
    expect(page.get_by_label("Hours")).to_have_value("8")
    expect(page.locator("#dsportal-summary")).to_have_text("2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2")
    shot(page, "options-form")
    page.get_by_role("button", name="Start").click()

    # 3. the progress page follows Slurm, then JupyterLab opens
    expect(page.locator("#progress-message")).to_contain_text(re.compile(r"Job \d+ is|JupyterLab"))
    shot(page, "progress")
    page.wait_for_url(re.compile(r"/user/alice/lab"), timeout=120_000)
    job = cluster.job_of("alice")
    assert cluster.jobs("alice")[job]["state"] == "RUNNING"

    # 4. templates and isilon; the TensorFlow template runs
    # The terminal's text in the DOM (to read it in step 6): a setting JupyterLab reads when the page loads.
    status, _ = cluster.request("PUT", "/user/alice/lab/api/settings/@jupyterlab/terminal-extension:plugin",
                                {"raw": '{"screenReaderMode": true}'})
    assert status == 204
    page.goto(f"{HUB}/user/alice/lab?reset")  # a fresh workspace, whatever an earlier run left open
    listing = page.locator(".jp-DirListing-content")
    expect(listing.get_by_text("templates", exact=True)).to_be_visible()
    expect(listing.get_by_text("isilon", exact=True)).to_be_visible()
    shot(page, "jupyterlab")
    listing.get_by_text("templates", exact=True).dblclick()
    listing.get_by_text("tensorflow-mnist.ipynb", exact=True).dblclick()
    expect(page.locator(".jp-Notebook").first).to_be_visible()
    # The Kernel menu acts only once the notebook's kernel is up: the status bar says "<kernel> | Idle"
    # (the toolbar's execution indicator can read idle while the kernel is still "Initializing").
    expect(page.locator("#jp-main-statusbar").get_by_text(re.compile(r"^Python 3 \| Idle$"))).to_be_visible(
        timeout=90_000)
    page.get_by_role("menuitem", name="Kernel").click()
    page.get_by_role("menuitem", name=re.compile("Restart Kernel and Run All Cells")).click()
    shot(page, "restart-dialog")
    page.get_by_role("button", name="Confirm Kernel Restart").click()
    outputs = page.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text=re.compile(r"Epoch 3 Global Step \d+, done"))).to_be_visible(timeout=240_000)
    text = " ".join(outputs.all_inner_texts())
    assert re.search(r"Epoch 1 Global Step 1, Training Accuracy \d\.\d{4}", text)
    assert re.search(r"Test Accuracy \d\.\d{4}", text)
    shot(page, "tensorflow-notebook")

    # 5. the logs folder -> Open TensorBoard -> a new tab with the run's scalars
    listing.get_by_text("logs", exact=True).click(button="right")
    with alice.expect_page() as new_tab:
        page.get_by_role("menuitem", name="Open TensorBoard").click()
    board = new_tab.value
    board.wait_for_url(re.compile(r"/user/alice/dsportal/tensorboard/[0-9a-f]{12}/"))
    expect(board.get_by_text("test_accuracy").first).to_be_visible(timeout=90_000)
    shot(board, "tensorboard")
    tensorboard_url = board.url

    # 6. a terminal in the job
    page.bring_to_front()
    page.locator(".jp-FileBrowser [data-command='launcher:create']").click()  # the "+" of the file browser
    page.locator(".jp-LauncherCard[title='Start a new terminal session']:visible").first.click()
    terminal = page.locator(".jp-Terminal").last
    expect(terminal).to_be_visible()
    # Type only once the shell's prompt is on screen: keys sent before the terminal's
    # websocket is open and bash has started are lost (the screen then shows only
    # xterm's screen-reader notice).
    expect(terminal).to_contain_text("$", timeout=60_000)
    terminal.locator("textarea.xterm-helper-textarea").focus()
    page.keyboard.type("hostname; echo node=$SLURMD_NODENAME job=$SLURM_JOB_ID\n")
    node = cluster.jobs("alice")[job]["node"]
    expect(terminal).to_contain_text(f"node={node} job={job}", timeout=30_000)
    shot(page, "terminal")

    # 8. bob, logged in at the same time, cannot open alice's server or her TensorBoard
    bob = browser.new_context()
    bob_page = bob.new_page()
    log_in(bob_page, "bob", "bob-pw")
    expect(bob_page).not_to_have_url(re.compile("login"))
    response = bob_page.goto(url_for("/user/alice/lab"))  # alice's server, on its own origin
    expect(bob_page.locator(".jp-LabShell")).to_have_count(0)
    assert response.status == 403 or "403" in bob_page.content()
    shot(bob_page, "bob-denied-lab")
    response = bob_page.goto(tensorboard_url)
    assert response.status == 403 or "403" in bob_page.content()
    expect(bob_page.get_by_text("test_accuracy")).to_have_count(0)
    shot(bob_page, "bob-denied-tensorboard")
    bob.close()

    # 7. Control Panel -> Stop My Server -> stopped, and Slurm has no job for alice
    page.goto(f"{HUB}/hub/home")
    page.get_by_role("button", name="Stop My Server").click()
    expect(page.get_by_role("button", name="Start My Server")).to_be_visible(timeout=60_000)
    shot(page, "stopped")
    cluster.wait(lambda: not cluster.jobs("alice"), 30, "alice's job leaving the queue")
    out = subprocess.run(["squeue", "-h", "-u", "alice"], capture_output=True, text=True, timeout=30).stdout
    assert out.strip() == ""
    alice.close()


def test_refused_option_is_shown_in_the_page(browser, cluster):
    context = browser.new_context()
    page = context.new_page()
    log_in(page, "bob", "bob-pw")
    page.goto(f"{HUB}/hub/spawn")
    page.locator("#dsportal-hours").evaluate("el => { el.removeAttribute('max'); el.value = '99'; }")
    page.get_by_role("button", name="Start").click()
    expect(page.locator(".spawn-error-msg")).to_contain_text("hours: 99 is out of range; choose a number of hours above 0 and at most 12.")
    shot(page, "refused-option")
    # the refusal above is the hub's answer to this very spawn request: nothing can be submitted after it
    assert cluster.jobs("bob") == {}
    assert cluster.server("bob") is None
    context.close()

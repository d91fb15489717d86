"""The user journey of the reference guide's section 4, in real Chromium against the dev cluster.

Playwright for Python drives Debian's /usr/bin/chromium (headless).  Each step
asserts on what the page shows a person (and that it shows no error text) and
saves a screenshot, with what it shows, into the gallery the test run names at
the end.  A console error or failed request that the test does not provoke on
purpose fails it (tests/support/browser.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import time

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.support.browser import log_in, shot
from tests.support.cluster import HUB, ROOT, url_for
from tests.support.demo import password_of

FREE = re.compile(
    r"^sxm2: [0-8] of 8 GPUs free, largest free block [0-4] on one node, [0-9]+ of 16 shares of a GPU free$"
)
WHEN = re.compile(
    r"^2 GPUs \(A100 80 GB\) · 16 cores · 96 GB RAM · 8 h on sxm2: (can start now\.|not free now; Slurm expects it could "
    r"start at \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?\.|not free now, and Slurm gives no estimate of when it "
    r"would start\.)$"
)


def test_login_page_at_phone_width(browser, cluster):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(HUB)
    expect(page.get_by_text("Log in with your cluster username and password.")).to_be_visible()
    expect(page.get_by_label("Username:")).to_be_visible()
    expect(page.get_by_label("Password:", exact=True)).to_be_visible()
    box = page.locator("#username_input").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390  # fits the screen
    shot(page, "login-phone", "The login page at a phone's width (390 px).")
    context.close()


def test_the_journey(browser, cluster):
    alice = browser.new_context(viewport={"width": 1366, "height": 900})
    page = alice.new_page()
    page.set_default_timeout(60_000)

    # 1. the login page; a wrong password is a plain error
    page.goto(HUB)
    expect(page).to_have_title(re.compile("DS Portal"))
    expect(page.get_by_text("Log in with your cluster username and password.")).to_be_visible()
    shot(page, "login", "The login page: the cluster username and password.")
    browser.allow(r"/hub/login", 403, why="the wrong password below")
    log_in(page, "alice", "not-her-password")
    expect(page.locator(".login_error")).to_have_text("Invalid username or password")
    shot(page, "login-wrong-password", "A wrong password: a plain error, nothing else.")

    # 2. log in -> the home page (no session: one Start button, what is free) -> the options form
    log_in(page, "alice", password_of("alice"))
    page.goto(f"{HUB}/hub/home")
    expect(page.locator("#dsportal-state")).to_have_text("not running")
    expect(page.get_by_role("button", name="Start My Server")).to_have_count(1)
    expect(page.get_by_role("button", name=re.compile("Stop"))).to_have_count(0)
    expect(page.locator("#dsportal-partitions li").first).to_have_text(FREE)
    shot(page, "home-no-session", "The home page without a session: one Start button, what is free, the presets.")
    page.get_by_role("button", name="Start My Server").click()
    expect(page.get_by_role("heading", name="Start your session")).to_be_visible()
    expect(page.get_by_label("Partition")).to_have_value("sxm2")
    page.locator("label[for=dsportal-gpus-2]").click()
    expect(page.get_by_label("Hours")).to_have_value("8")
    expect(page.locator("#dsportal-summary")).to_have_text("2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2")
    # what is free and when this shape starts: the hub's answers (the form's fetch sends the XSRF token)
    expect(page.locator("#dsportal-free")).to_have_text(FREE)
    # sxm2 has two GPU types (node001's V100, node002's A100): the form offers them with what is free of each
    gpu_type = page.get_by_label("GPU type")
    expect(gpu_type).to_be_visible()
    expect(gpu_type.locator("option")).to_have_text(
        [
            "Any type: whichever is free first",
            re.compile(r"^A100 80 GB: [0-4] of 4 free, largest block [0-4]$"),
            re.compile(r"^V100 32 GB: [0-4] of 4 free, largest block [0-4]$"),
        ]
    )
    gpu_type.select_option("a100")
    expect(page.locator("#dsportal-summary")).to_have_text("2 GPUs (A100 80 GB) · 16 cores · 96 GB RAM · 8 h on sxm2")
    # the QOS the dev config offers, each with its longest session from Slurm (alice's accounts allow both)
    expect(page.get_by_label("QOS").locator("option")).to_have_text(
        ["Default", "Short (at most 1 h)", "Long (at most 12 h)"]
    )
    # what the session may use of the account it charges (vision: no GPU allocation), and her fairshare there
    expect(page.locator("#dsportal-cost")).to_have_text(
        re.compile(r"^Up to 16 GPU-hours of vision; your fairshare there [01]\.[0-9]{2}\.$")
    )
    expect(page.locator("#dsportal-when")).to_have_text(WHEN)
    shot(
        page,
        "options-form",
        "The options form: partition, GPU type (sxm2 has V100 and A100), GPUs, Slurm account and QOS (alice is in "
        "two projects), hours, the resources line, the free GPUs and when Slurm would start this shape.",
    )
    page.get_by_role("button", name="Start").click()

    # 3. the progress page follows Slurm, then JupyterLab opens
    # (a start Slurm runs at once is answered 201 and goes straight to JupyterLab, without the progress page)
    progress = page.locator("#progress-message")
    deadline = time.monotonic() + 60
    while "/user/alice/lab" not in page.url and time.monotonic() < deadline:
        try:  # the page may be navigating to JupyterLab right now
            words = progress.text_content(timeout=1_000) if progress.count() else ""
        except PlaywrightError:
            words = ""
        if re.search(r"Job \d+ is|JupyterLab", words or ""):
            shot(page, "progress", "The progress page: Slurm's state of the session's job in words.")
            break
        page.wait_for_timeout(100)
    else:
        assert "/user/alice/lab" in page.url, "neither the progress page's words nor JupyterLab within 60 s"
    page.wait_for_url(re.compile(r"/user/alice/lab"), timeout=120_000)
    job = cluster.job_of("alice")
    assert cluster.jobs("alice")[job]["node"] == "node002"  # the A100 node
    assert cluster.jobs("alice")[job]["state"] == "RUNNING"

    # 4. templates and isilon; the TensorFlow template runs
    # The terminal's text in the DOM (to read it in step 6): a setting JupyterLab reads when the page loads.
    status, _ = cluster.request(
        "PUT",
        "/user/alice/lab/api/settings/@jupyterlab/terminal-extension:plugin",
        {"raw": '{"screenReaderMode": true}'},
    )
    assert status == 204
    # the template as shipped, without the outputs an earlier run saved: its "done" line must be this run's
    template = json.loads((ROOT / "notebooks" / "tensorflow-mnist.ipynb").read_text())
    status, _ = cluster.request(
        "PUT",
        "/user/alice/api/contents/templates/tensorflow-mnist.ipynb",
        {"type": "notebook", "format": "json", "content": template},
    )
    assert status in (200, 201)
    page.goto(f"{HUB}/user/alice/lab?reset")  # a fresh workspace, whatever an earlier run left open
    listing = page.locator(".jp-DirListing-content")
    expect(listing.get_by_text("templates", exact=True)).to_be_visible()
    expect(listing.get_by_text("isilon", exact=True)).to_be_visible()
    expect(page.locator(".dsportal-time-left")).to_have_text(re.compile(r"^Time left: (7 h [0-5]?\d min|8 h)$"))
    expect(page.locator(".dsportal-gpu-usage")).to_have_text(re.compile(r"^GPU[0-3] \d+% · \d+\.\d/32 GB"))
    shot(
        page,
        "jupyterlab",
        "JupyterLab in the job: templates and isilon in the home, the time left and the job's GPUs in the status bar.",
    )
    listing.get_by_text("templates", exact=True).dblclick()
    listing.get_by_text("tensorflow-mnist.ipynb", exact=True).dblclick()
    expect(page.locator(".jp-Notebook").first).to_be_visible()
    # The Kernel menu acts only once the notebook's kernel is up: the status bar says "<kernel> | Idle"
    # (the toolbar's execution indicator can read idle while the kernel is still "Initializing").
    expect(page.locator("#jp-main-statusbar").get_by_text(re.compile(r"^Python 3 \| Idle$"))).to_be_visible(
        timeout=90_000
    )
    # JupyterLab asks a new kernel for its debugger state; the restart below cancels that question
    browser.allow(r"Could not restore the debugger state: Canceled future", why="the kernel restart")
    page.get_by_role("menuitem", name="Kernel").click()
    page.get_by_role("menuitem", name=re.compile("Restart Kernel and Run All Cells")).click()
    shot(page, "restart-dialog", "Restart the kernel and run all cells of the TensorFlow template.")
    page.get_by_role("button", name="Confirm Kernel Restart").click()
    outputs = page.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text=re.compile(r"Epoch 3 Global Step \d+, done"))).to_be_visible(timeout=240_000)
    text = " ".join(outputs.all_inner_texts())
    assert re.search(r"Epoch 1 Global Step 1, Training Accuracy \d\.\d{4}", text)
    assert re.search(r"Test Accuracy \d\.\d{4}", text)
    shot(page, "tensorflow-notebook", "The TensorFlow template ran: accuracy per epoch and on the test set.")

    # 5. the logs folder -> Open TensorBoard -> a new tab with the run's scalars
    listing.get_by_text("logs", exact=True).click(button="right")
    with alice.expect_page() as new_tab:
        page.get_by_role("menuitem", name="Open TensorBoard").click()
    board = new_tab.value
    board.wait_for_url(re.compile(r"/user/alice/dsportal/tensorboard/[0-9a-f]{12}/"))
    expect(board.get_by_text("test_accuracy").first).to_be_visible(timeout=90_000)
    shot(board, "tensorboard", "TensorBoard for the logs folder in its own tab, behind alice's login.")
    tensorboard_url = board.url
    # the session's page of its running TensorBoards (the launcher's "TensorBoards"): the portal's, checked whole
    board.goto(url_for("/user/alice/dsportal/tensorboard/"))
    expect(board.get_by_role("button", name=re.compile("Stop"))).to_have_count(1)
    shot(board, "tensorboard-list", "The session's running TensorBoards, each with Stop.", within="body")

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
    shot(page, "terminal", "A terminal in the job: the node and the job id.")

    # 8. bob, logged in at the same time, cannot open alice's server or her TensorBoard
    bob = browser.new_context()
    browser.allow(
        r"^https://alice\.localhost:8000/|/hub/api/oauth2/authorize\?client_id=jupyterhub-user-alice&",
        403,
        why="bob opens alice's JupyterLab and TensorBoard",
    )
    bob_page = bob.new_page()
    log_in(bob_page, "bob", password_of("bob"))
    expect(bob_page).not_to_have_url(re.compile("login"))
    response = bob_page.goto(url_for("/user/alice/lab"))  # alice's server, on its own origin
    expect(bob_page.locator(".jp-LabShell")).to_have_count(0)
    assert response.status == 403 or "403" in bob_page.content()
    shot(bob_page, "bob-denied-lab", "bob asks for alice's JupyterLab: 403.", errors_expected=True)
    response = bob_page.goto(tensorboard_url)
    assert response.status == 403 or "403" in bob_page.content()
    expect(bob_page.get_by_text("test_accuracy")).to_have_count(0)
    shot(bob_page, "bob-denied-tensorboard", "bob asks for alice's TensorBoard: 403.", errors_expected=True)
    bob.close()

    # 7. the home page: the card says what the hub says, with one set of controls; Stop -> stopped at once
    page.goto(f"{HUB}/hub/home")
    assert cluster.server("alice")["ready"]
    expect(page.locator("#dsportal-state")).to_have_text("running")
    expect(page.locator("#dsportal-facts")).to_contain_text(f"Job{job}")
    expect(page.get_by_role("button", name=re.compile("Start My Server|Stop My Server"))).to_have_count(0)
    expect(page.get_by_role("button", name="Stop")).to_have_count(1)
    expect(page.get_by_role("button", name="Open JupyterLab")).to_have_count(1)
    shot(page, "home-running", "The home page with the session running: its card, one set of controls.")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#dsportal-state")).to_have_text("not running", timeout=60_000)
    assert cluster.server("alice") is None  # the card follows the hub, not the other way round
    expect(page.get_by_role("button", name="Start My Server")).to_have_count(1)
    expect(page.locator("#dsportal-facts")).to_be_empty()
    expect(page.locator("#dsportal-history li").first).to_contain_text(f"(job {job})")
    shot(page, "stopped", "Right after Stop: no session, one Start button, the session in the history.")
    # its receipt, saved from the history: what she asked for, where and with what it ran
    with page.expect_download() as saving:
        page.get_by_role("button", name=f"Download the receipt of job {job}").click()
    assert saving.value.suggested_filename == f"dsportal-receipt-{job}.json"
    receipt = json.loads(open(saving.value.path()).read())
    assert (receipt["kind"], receipt["user"], receipt["job_id"]) == ("session", "alice", job)
    assert receipt["environment"]["nodes"] == "node002" and receipt["environment"]["packages"], receipt
    expect(page.locator("#dsportal-history-error")).to_be_empty()
    cluster.wait(lambda: not cluster.jobs("alice"), 30, "alice's job leaving the queue")
    out = subprocess.run(["squeue", "-h", "-u", "alice"], capture_output=True, text=True, timeout=30).stdout
    assert out.strip() == ""
    alice.close()


def test_refused_option_is_shown_in_the_page(browser, cluster):
    context = browser.new_context()
    page = context.new_page()
    log_in(page, "bob", password_of("bob"))
    page.goto(f"{HUB}/hub/spawn")
    # hours above the field's max: the browser says why, and the form asks the hub nothing about them
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "hours=13" in r.url else None)
    page.locator("#dsportal-hours").fill("13")
    expect(page.locator("#dsportal-when")).to_contain_text("less than or equal to 12")
    assert asked == []
    page.locator("label[for=dsportal-gpus-2]").click()
    page.locator("#dsportal-hours").evaluate("el => { el.removeAttribute('max'); el.value = '99'; }")
    browser.allow(r"/hub/spawn(/bob)?(\?|$)", 400, why="the refused option")
    # the form asks for an estimate of what it holds half a second after a change or its load: of 99 hours too
    browser.allow(r"/hub/api/dsportal/estimate\?.*hours=99", 400, why="the refused option's estimate")
    page.get_by_role("button", name="Start").click()
    expect(page.locator(".spawn-error-msg")).to_contain_text(
        "hours: 99 is out of range; choose a number of hours above 0 and at most 12."
    )
    # the refusal tied to its field, which has the keyboard: a screen reader reads them together
    hours = page.locator("#dsportal-hours")
    expect(hours).to_be_focused()
    # nothing chosen is lost: the form comes back with the answers that were sent, not its defaults
    expect(hours).to_have_value("99")
    expect(page.locator("#dsportal-gpus-2")).to_be_checked()
    expect(hours).to_have_attribute("aria-invalid", "true")
    expect(hours).to_have_attribute("aria-describedby", "dsportal-form-error dsportal-hours-help")
    expect(page.locator("#dsportal-form-error")).to_have_attribute("role", "alert")
    shot(page, "refused-option", "A refused option: the form again, with what to choose instead.")
    # the refusal above is the hub's answer to this very spawn request: nothing can be submitted after it
    assert cluster.jobs("bob") == {}
    assert cluster.server("bob") is None
    context.close()

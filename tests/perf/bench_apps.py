"""Benchmark: from the click to a usable app tab, and what each app holds in memory once idle.

In real Chromium against the dev cluster, alice's session (0 GPUs): each run clicks the launcher's VS Code
(usable: its explorer lists the folder), "Open as app" on a Streamlit file (usable: its text input drawn) and
"Open MLflow" on a folder of runs (usable: the experiment listed), each app started afresh; then, with the
three running and no tab open, each app's processes' RSS and PSS once they hold still.  Prints numbers;
asserts nothing about speed.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_apps [--runs 3]     (from the repository's root)
"""

from __future__ import annotations

import argparse
import statistics
import time

import psutil
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright

from tests.perf.memory import MiB, idle_footprint
from tests.support import browser as browser_support
from tests.support.apps import API, prepare_folder
from tests.support.cluster import TOKEN_FILE, Cluster, url_for
from tests.support.demo import password_of

USER = "alice"
APPS = {  # app: (what opens it, what shows it usable, what its processes' command lines hold)
    "vscode": ("VS Code", ".explorer-viewlet >> text=hello.py", "code-server"),
    "streamlit": ("Open as app", "input[aria-label='Your name']", "spawner.job.apps.streamlitapp"),
    "mlflow": ("Open MLflow", "text=alice-experiment", "mlflow"),
}


def open_app(context: BrowserContext, lab: Page, app: str) -> float:
    """Seconds from the click that opens `app` to its tab usable."""
    opener, usable, _ = APPS[app]
    listing = lab.locator(".jp-DirListing-content")
    if app == "vscode":
        lab.locator(".jp-FileBrowser [data-command='launcher:create']").click()
        click = lab.locator(".jp-LauncherCard[title^='VS Code']:visible").first
    else:
        listing.get_by_text("hello.py" if app == "streamlit" else "runs", exact=True).click(button="right")
        click = lab.get_by_role("menuitem", name=opener)
    started = time.perf_counter()
    with context.expect_page() as new_tab:
        click.click()
    tab = new_tab.value
    expect(tab.locator(usable).first).to_be_visible(timeout=120_000)
    took = time.perf_counter() - started
    tab.close()
    lab.bring_to_front()
    return took


def stop_all(cluster: Cluster) -> None:
    for running in cluster.request("GET", API)[1]:
        cluster.request("DELETE", f"{API}/{running['id']}")


def session_server() -> psutil.Process:
    """alice's Jupyter server: the dsportal-singleuser its port keeper (another) forked."""
    for proc in psutil.process_iter(["username", "cmdline"]):
        try:
            parent = proc.parent()
            if (
                proc.info["username"] == USER
                and "dsportal-singleuser" in " ".join(proc.info["cmdline"] or [])
                and parent is not None
                and "dsportal-singleuser" in " ".join(parent.cmdline())
            ):
                return proc
        except psutil.NoSuchProcess:  # came and went while listed
            continue
    raise RuntimeError(f"no session server of {USER}")


def app_pids(needle: str) -> list[int]:
    """The processes of the app whose top process (a child of the session's server) names `needle`."""
    pids = []
    for child in session_server().children():
        try:
            if needle in " ".join(child.cmdline()):
                pids += [child.pid, *(p.pid for p in child.children(recursive=True))]
        except psutil.NoSuchProcess:
            continue
    return sorted(pids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    cluster.clean()
    prepare_folder()
    assert cluster.start(USER, {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready(USER)
    timings: dict[str, list[float]] = {app: [] for app in APPS}
    with sync_playwright() as p:
        browser = p.chromium.launch(**browser_support.launch_options())
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        lab = context.new_page()
        browser_support.log_in(lab, USER, password_of(USER))
        lab.wait_for_url(lambda url: "/hub/login" not in url, timeout=60_000)
        lab.goto(url_for(f"/user/{USER}/lab/tree/apps-test?reset"))
        expect(lab.locator(".jp-DirListing-content").get_by_text("hello.py", exact=True)).to_be_visible(timeout=120_000)
        for run in range(args.runs):
            stop_all(cluster)
            for app in APPS:
                timings[app].append(open_app(context, lab, app))
            print(f"run {run + 1}: " + ", ".join(f"{app} {timings[app][-1]:.2f} s" for app in APPS), flush=True)
        context.close()
        browser.close()
    print(f"click to a usable tab, {args.runs} runs each (min / median / max):")
    for app, values in timings.items():
        print(f"  {app:10s} {min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} s")
    print("each app idle, no tab open (its processes, once they hold still):")
    for app, (_, _, needle) in APPS.items():
        rss, pss, count = idle_footprint(lambda n=needle: app_pids(n))
        print(f"  {app:10s} RSS {rss / MiB:.0f} MiB, PSS {pss / MiB:.0f} MiB, {count} processes")
    server = session_server()
    print(f"  (the session's Jupyter server itself: RSS {server.memory_info().rss / MiB:.0f} MiB)")
    cluster.clean()


if __name__ == "__main__":
    main()

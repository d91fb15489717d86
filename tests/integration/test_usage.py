"""What sessions used, on the real dev cluster: the stand-in NVML's readings set by the test, the session's own
reports, real slurmdbd's accounting (sacct) and real Prometheus scraping the hub.

The dev config samples and reports every 5 s and reads the accounting and the cluster every 5 s; Prometheus
scrapes every 5 s (deploy/dev/prometheus.py).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
import urllib.request

import psutil
import pytest

from spawner.hub.usage.prometheus import instant_url, read_answer
from spawner.hub.usage.status import HEAVY_USERS, queries
from tests.perf.memory import job_pids
from tests.support.cluster import HUB, NVML_READINGS, Cluster, job_gpus, supervisorctl, url_for
from tests.support.demo import password_of
from tests.support.http import json_request, wait_until
from tests.support.hub import FormBrowser

TWO_GPUS = {"partition": "sxm2", "gpus": 2, "hours": 1}
PROMETHEUS = "http://127.0.0.1:9090"  # the dev cluster's (deploy/dev/prometheus.py)
ADVICE = "1 of 2 GPUs did work; next time ask for 1."


def own(token: str, path: str):
    status, body = json_request("GET", url_for(path), None, token=token, timeout=60)
    assert status == 200, body
    return body


def sacct_cpu_line(job_id: str) -> str:
    """The start of the summary's CPU line as Slurm's own accounting gives it: TotalCPU / (AllocCPUS x Elapsed).
    Not --allocations: its line's TotalCPU is 0; the job's line without it sums the steps'."""
    out = subprocess.run(
        ["sacct", "-j", job_id, "--noheader", "--parsable2", "--format=JobID,TotalCPU,AllocCPUS,ElapsedRaw"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    total, cpus, elapsed = next(line.split("|")[1:] for line in out.splitlines() if line.startswith(f"{job_id}|"))
    *hours, minutes, seconds = total.split(":")  # [HH:]MM:SS.mmm: the test's sessions last minutes
    cpu = 3600 * int(hours[0] if hours else 0) + 60 * int(minutes) + float(seconds)
    return f"CPU: {round(100 * cpu / (int(cpus) * int(elapsed)))}% of {cpus} cores over "


def sacct_lines(*argv: str) -> list[list[str]]:
    out = subprocess.run(
        ["sacct", "--noheader", "--parsable2", "--allocations", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return [line.split("|") for line in out.splitlines()]


def elapsed_seconds(job_id: str) -> int:
    """How long Slurm says the job has run."""
    return int(sacct_lines("-j", job_id, "--format=ElapsedRaw")[0][0])


def slurms_gpu_hours(user: str) -> float:
    """The user's GPU-hours of the last 7 days as Slurm's accounting gives them: gres/gpu x ElapsedRaw."""
    total = 0
    for tres, elapsed in sacct_lines("-u", user, "--starttime=now-7days", "--format=AllocTRES,ElapsedRaw"):
        gpus = dict(item.split("=", 1) for item in tres.split(",") if "=" in item).get("gres/gpu", "0")
        total += int(gpus) * int(elapsed)
    return round(total / 3600, 2)


def logged_in(user: str) -> FormBrowser:
    browser = FormBrowser(HUB)
    assert browser.login(user, password_of(user))[0] == 302
    return browser


def test_a_session_that_used_one_of_two_gpus_gets_that_advice_with_slurms_numbers(cluster):
    dave = cluster.user_token("dave")
    cluster.start("dave", TWO_GPUS)
    cluster.wait_ready("dave")
    job = cluster.job_of("dave")
    node, indices = job_gpus(job)
    assert len(indices) == 2
    reading = NVML_READINGS / f"{node}-{indices[0]}"
    reading.write_text("85 6000 1")  # the first GPU computes; the second sits idle
    try:
        # the card shows what the session used so far, from its reports
        def so_far():
            return own(dave, "/hub/api/dsportal/session")["sessions"][0]["usage"]

        cluster.wait(lambda: any("peak 85%" in line for line in so_far()), 60, "the card showing the busy GPU")
        lines = so_far()
        # the session numbers its GPUs from 0, as CUDA and NVML in a job of a ConstrainDevices node do
        assert lines[:2] == [
            f"GPU 0: {lines[0].split(': ')[1].split('%')[0]}% on average, peak 85%, memory peak 5.9 GB of 32.0 GB",
            "GPU 1: 0% on average, peak 0%, memory peak 0.3 GB of 32.0 GB",
        ]
        assert ADVICE not in lines  # no advice while it runs
        # the stand-in GPUs report their energy counter, as Volta and later do: the card says what they drew
        assert any(re.fullmatch(r"GPU energy: [0-9.,]+ Wh \(NVML\)", line) for line in lines), lines

        # JupyterLab's notice near the end reads the session's own summary, judged once it has read enough
        def judged():
            status, summary = cluster.request("GET", "/user/dave/dsportal/session/usage")
            assert status == 200, summary
            return not summary["advice"].startswith("Too short to judge") and summary

        summary = cluster.wait(judged, 30, "enough readings of dave's GPUs to judge them")
        assert (summary["advice"], summary["gpus_worked"], summary["cpus"]) == (ADVICE, 1, 16)
    finally:
        reading.unlink(missing_ok=True)
    # long enough that its GPU-hours show in the page's two decimals (2 GPUs x 36 s = 0.02)
    cluster.wait(lambda: elapsed_seconds(job) >= 36, 60, "the session running 36 s")
    cluster.stop("dave")

    def entry():
        return next(h for h in own(dave, "/hub/api/dsportal/session")["history"] if h["job_id"] == job)

    assert entry()["usage"]["advice"] == ADVICE  # at once, from the session's last report
    # then Slurm's CPU figure from slurmdbd replaces the session's own
    cluster.wait(lambda: cpu_line(entry()["usage"]["lines"]).startswith(sacct_cpu_line(job)), 60, "Slurm's CPU figure")
    assert entry()["usage"]["lines"][-1] == ADVICE

    # the usage page: this week's GPU-hours (Slurm's), and the session in the table
    page = logged_in("dave").get("/hub/dsportal/usage")[1]
    week = float(re.search(r'id="dsportal-week">([0-9.]+)<', page).group(1))
    assert slurms_gpu_hours("dave") >= 0.02
    assert week == pytest.approx(slurms_gpu_hours("dave"), abs=0.01)  # each rounded to two decimals
    assert f"<td>{job}</td><td>2 (1)</td>" in page


def cpu_line(lines: list[str]) -> str:
    """The summary's CPU line (after the GPUs' lines and, where they report it, their energy's)."""
    return next((line for line in lines if line.startswith("CPU: ")), "")


def split_rows(page: str) -> set[tuple[str, str]]:
    """The page's GPU-hours per account and type: {(account, GPU type)}."""
    table = re.search(r'id="dsportal-split">(.*?)</table>', page, re.S)
    return set(re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td>[0-9.]+</td>", table.group(1) if table else ""))


@pytest.mark.slurm
def test_the_usage_and_status_pages_split_gpu_hours_by_account_and_type(cluster):
    # an A100 session charged to alice's second project: Slurm's accounting keeps its account and, with
    # AccountingStorageTRES naming each type, its GPUs' type (gres/gpu:a100)
    cluster.start("alice", {"partition": "sxm2", "gpus": 1, "gpu_type": "a100", "account": "nlp", "hours": 1})
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    try:

        def accounted() -> str:
            """sacct's line once slurmdbd has the job's start (before, its AllocTRES is empty)."""
            out = subprocess.run(
                ["sacct", "-n", "-X", "-P", "-j", job, "--format=AllocTRES,Account"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
            return out if out.split("|")[0] else ""

        alloc = cluster.wait(accounted, 60, "the job's allocation in Slurm's accounting")
        assert "gres/gpu:a100=1" in alloc and alloc.endswith("|nlp"), alloc
        alice, carol = logged_in("alice"), logged_in("carol")
        cluster.wait(
            lambda: ("nlp", "A100 80 GB") in split_rows(alice.get("/hub/dsportal/usage")[1]),
            60,
            "the nlp A100 row on alice's usage page",
        )
        assert all(account in ("vision", "nlp") for account, _ in split_rows(alice.get("/hub/dsportal/usage")[1]))
        cluster.wait(
            lambda: ("nlp", "A100 80 GB") in split_rows(carol.get("/hub/dsportal/status")[1]),
            60,
            "the nlp A100 row on the status page",
        )
    finally:
        cluster.stop("alice")


def test_the_status_page_is_for_admins_and_says_when_prometheus_is_down(cluster):
    alice = logged_in("alice")
    status, page, _ = alice.get("/hub/dsportal/status")
    assert status == 403 and "The cluster&#39;s status page is for the portal&#39;s admins." in page
    carol = logged_in("carol")
    assert carol.get("/hub/dsportal/status?range=1y")[0] == 400
    status, page, _ = carol.get("/hub/dsportal/status")
    assert status == 200 and 'id="dsportal-gpus-now"' in page and "dsportal-status-error" not in page
    supervisorctl("stop", "prometheus")
    try:
        started = time.monotonic()
        status, page, _ = carol.get("/hub/dsportal/status")
        assert status == 200
        assert re.search(r"Prometheus at http://127\.0\.0\.1:9090 (does not answer|cannot be reached)", page)
        assert "The rest of the portal works as usual." in page
        assert time.monotonic() - started < 10  # refused at once, never the hub's whole timeout
        assert cluster.request("GET", "/hub/api/")[0] == 200  # the hub is unaffected
    finally:
        supervisorctl("start", "prometheus")
    cluster.wait(lambda: "dsportal-status-error" not in carol.get("/hub/dsportal/status")[1], 60, "the page again")


@pytest.fixture
def slurmdbd_restored():
    yield
    supervisorctl("start", "slurmdbd")
    wait_until(
        lambda: (
            subprocess.run(["sacct", "-n", "-X", "-S", "now-1hour"], capture_output=True, timeout=30).returncode == 0
        ),
        60,
        "slurmdbd answering again",
        every=1,
    )


@pytest.mark.alone  # stops slurmdbd
def test_without_accounting_the_usage_page_says_so_and_keeps_the_sessions_own_numbers(cluster, slurmdbd_restored):
    supervisorctl("stop", "slurmdbd")
    dave = logged_in("dave")

    def page():
        return dave.get("/hub/dsportal/usage")

    # the last answer is kept for usage.accounting_seconds (5 s): then the page says so
    cluster.wait(lambda: "does not answer" in page()[1], 60, "the usage page saying the accounting is down")
    status, text, _ = page()
    assert status == 200
    assert "Slurm&#39;s accounting (slurmdbd) does not answer" in text
    assert 'id="dsportal-week"' not in text  # no GPU-hours without Slurm
    assert 'id="dsportal-plot-efficiency"' in text  # the sessions' own readings still are
    assert cluster.request("GET", "/hub/api/")[0] == 200


def session_token(user: str, job_id: str) -> str:
    """The session's own API token, as the user's code in it reads it (here as root, from /proc/PID/environ)."""
    for pid in job_pids(user, job_id):
        token = psutil.Process(pid).environ().get("JUPYTERHUB_API_TOKEN")
        if token:
            return token
    raise AssertionError(f"no process of job {job_id} holds a token")


def counted_gpu_hours(cluster: Cluster, user: str) -> float:
    """The user's GPU-hours counter on the hub's /hub/metrics (0 before their first session)."""
    status, text = cluster.request("GET", "/hub/metrics")
    assert status == 200
    match = re.search(rf'^dsportal_user_gpu_hours_total{{user="{user}"}} (\S+)$', text, re.M)
    return float(match.group(1)) if match else 0.0


def ranking(carol: FormBrowser) -> dict[str, tuple[float, int]]:
    """The status page's least efficient heavy users: {user: (GPU-hours, % busy)}."""
    table = re.search(r'id="dsportal-users">(.*?)</table>', carol.get("/hub/dsportal/status")[1], re.S)
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([0-9.]+)</td><td>([0-9]+)%</td></tr>", table.group(1) if table else "")
    return {user: (float(hours), int(busy)) for user, hours, busy in rows}


def gpu_hours_by_user() -> dict[str, float]:
    """What the status page ranks from: each user's GPU-hours of the last 24 h, as the dev Prometheus answers."""
    query = queries("24h")["user_hours"]
    with urllib.request.urlopen(instant_url(PROMETHEUS, query), timeout=10) as answer:
        return {s.labels["user"]: s.points[-1][1] for s in read_answer(answer.read()) if s.points}


@pytest.mark.alone  # ranks every user's GPU-hours
def test_a_session_that_reports_an_empty_tally_still_counts_its_gpu_hours_and_ranks(cluster):
    """dave's code in his 2-GPU session sends {} as the session's usage report every half second (59 times,
    then on while the session stops, so that his is the last report): the hub counts his GPUs x the time
    it saw the job run, whatever he reports, and the admins' ranking lists him as the least efficient."""
    before = counted_gpu_hours(cluster, "dave")
    assert cluster.start("dave", TWO_GPUS) in (201, 202)
    cluster.wait_ready("dave")
    job = cluster.job_of("dave")
    token = session_token("dave", job)
    report = url_for("/hub/api/dsportal/session/usage")
    accepted, stopping, stopped = [], threading.Event(), threading.Event()

    def forge() -> None:
        while not stopped.is_set():
            status, _ = json_request("POST", report, {}, token=token)
            if not stopping.is_set():  # once the stop began, the hub refuses them (the session is ending)
                accepted.append(status)
            stopped.wait(0.5 if len(accepted) < 59 else 0.05)  # the attack's pace; faster while it stops

    forger = threading.Thread(target=forge, daemon=True)
    forger.start()
    cluster.wait(lambda: len(accepted) >= 59, 90, "59 forged reports")
    assert set(accepted) == {204}, accepted  # the hub takes them: the report is his to send
    ran_at_least = elapsed_seconds(job)
    stopping.set()
    try:
        cluster.stop("dave")
    finally:
        stopped.set()
        forger.join(30)
    grown = counted_gpu_hours(cluster, "dave") - before
    cluster.wait(lambda: sacct_lines("-j", job, "--format=State")[0][0] != "RUNNING", 60, "the job accounted ended")
    ran = elapsed_seconds(job)
    # the hub counts from when its listing first showed the job running (a poll after Slurm's start): 5 s either way
    assert 2 * (ran_at_least - 5) / 3600 <= grown <= 2 * (ran + 5) / 3600, (grown, ran_at_least, ran)
    # the admins' ranking (Prometheus scrapes the hub every 5 s) counts his hours: he is listed among the
    # HEAVY_USERS heaviest, or as many users with more GPU-hours fill the table (the soak's users may)
    cluster.wait(lambda: gpu_hours_by_user().get("dave", 0) >= 0.9 * grown, 60, "dave's GPU-hours in Prometheus")
    carol = logged_in("carol")
    table = ranking(carol)
    hours = gpu_hours_by_user()
    heavier = [user for user, h in hours.items() if h > hours["dave"]]
    if len(heavier) < HEAVY_USERS:
        assert "dave" in table and table["dave"][0] >= 0.01, table
    else:
        assert len(table) == HEAVY_USERS and "dave" not in table, table

"""Benchmark: what knowing each session's use costs: the session's sampling, its reports, and the usage pages.

  sampling (the dev cluster; `deploy/devcluster bench`): a real 2-GPU session's process tree and the dev
    cluster's stand-in NVML, read here as the session's sampler reads them (spawner/jupyter/usage/sampler.py:
    NVML for the job's GPUs, psutil over its processes), `--samples` times: wall and CPU time of one sample,
    and what that makes per hour at the default `usage.sample_seconds` (30) and at the dev cluster's (5); the
    size of a report and what the hub spends on one (JupyterHub's own request histogram of the report API,
    after the session's own reports every 5 s).
  --sessions N (the scale rig; `deploy/devcluster bench --scale`): N sessions running against the mock
    Slurm, whose accounting lists every job, and a real Prometheus scraping the rig's hub every 5 s:
    p50 / p99 of `GET /hub/metrics` (one scrape, and its size), the admins' status page and the users'
    usage pages (their first view after the accounting's answer expired, and the views that reuse it).

Asserts nothing about speed.  Run as root from the repository's root:

    /opt/dsportal/venv/bin/python -m tests.perf.bench_usage [--samples 200] [--sessions 500]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from tests.perf.bench_activity import server_pid
from tests.perf.memory import descendants
from tests.perf.stats import ms, percentile
from tests.support.cluster import Cluster, one_session
from tests.support.http import json_request
from tests.support.hub import ADMIN_TOKEN, FormBrowser

USER = "alice"
REPORT_HANDLER = "UsageReportHandler"
KERNELS = 2


def job_environment(pid: int, names: tuple[str, ...]) -> dict[str, str]:
    """The named variables of the session's environment (which node and GPUs; nothing secret is read)."""
    pairs = (item.partition("=") for item in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0"))
    return {key: value for key, _, value in pairs if key in names}


def report_requests(cluster: Cluster) -> tuple[float, float]:
    """(count, seconds) of the hub's answers to usage reports so far (JupyterHub's request histogram)."""
    text = cluster.request("GET", "/hub/metrics")[1]
    found = {}
    for part in ("count", "sum"):
        values = re.findall(
            rf'jupyterhub_request_duration_seconds_{part}\{{code="204",handler="[a-z.]*{REPORT_HANDLER}",'
            rf'method="POST"\}} ([0-9.e+-]+)',
            text,
        )
        found[part] = sum(float(v) for v in values)
    return found["count"], found["sum"]


def sampling(samples: int) -> None:
    from spawner.jupyter.session.activity import GpuWatch
    from spawner.jupyter.session.gpus import load_nvml, visible
    from spawner.jupyter.usage.sampler import UsageSampler, job_allocation, process_use

    with one_session(USER, {"gpus": 2, "hours": 1}) as cluster:
        pid = server_pid(USER)
        for _ in range(KERNELS):  # a session at work: the sampler walks its kernels too
            status, kernel = cluster.request("POST", f"/user/{USER}/api/kernels", {"name": "python3"})
            assert status == 201, kernel
        cluster.wait(lambda: descendants(pid) >= KERNELS, 60, "the kernels")
        env = job_environment(
            pid, ("SLURMD_NODENAME", "CUDA_VISIBLE_DEVICES", "SLURM_CPUS_ON_NODE", "SLURM_MEM_PER_NODE", "SLURM_JOB_ID")
        )
        os.environ["SLURMD_NODENAME"] = env["SLURMD_NODENAME"]  # the stand-in NVML answers for the session's node
        watch = GpuWatch(load_nvml(), visible(env["CUDA_VISIBLE_DEVICES"]))
        sampler = UsageSampler(watch, lambda: process_use(psutil.Process(pid)), job_allocation(env), report=None)
        reports0 = report_requests(cluster)
        walls, cpus = [], []
        for _ in range(samples):
            watch.read_at = -1e9  # a fresh NVML reading each time, as every sample 30 s apart makes
            wall, cpu = time.perf_counter(), time.process_time()
            sampler.sample()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        processes = descendants(pid) + 1
        cluster.wait(lambda: report_requests(cluster)[0] - reports0[0] >= 5, 60, "5 reports of the session")
        count, seconds = (a - b for a, b in zip(report_requests(cluster), reports0, strict=True))
    cpu = statistics.mean(cpus)
    size = len(json.dumps(sampler.tally.to_dict()))
    print(
        f"usage sampling, one 2-GPU session ({processes} processes: its server and kernels; the stand-in NVML), {samples} samples:"
    )
    wall50, wall99 = (1000 * percentile(walls, p) for p in (50, 99))
    print(f"  one sample: {wall50:.2f} ms p50, {wall99:.2f} ms p99 wall; {cpu * 1000:.2f} ms CPU on average")
    for every in (30, 5):
        print(f"  every {every} s: {cpu * 3600 / every:.2f} CPU seconds per hour ({100 * cpu / every:.3f} % of a core)")
    each = seconds / max(count, 1)
    print(f"  a report: {size} bytes; the hub answered {count:.0f}, {1000 * each:.1f} ms each (its handler's time)")
    print(f"  every 60 s (the default): {each * 60:.2f} s of the hub's time per hour per session")


def timed(ask, times: int) -> list[float]:
    out = []
    for _ in range(times):
        began = time.perf_counter()
        status = ask()
        out.append(time.perf_counter() - began)
        if status != 200:
            raise RuntimeError(f"answered {status}")
    return out


def pages(sessions: int, users: int, repeat: int) -> None:
    from tests.perf.bench_scale import start_waves
    from tests.support.prometheus import Prometheus
    from tests.support.scale import ScaleRig, user_names

    prometheus = Prometheus(ADMIN_TOKEN, scrape_seconds=5)
    with tempfile.TemporaryDirectory(prefix="dsportal-usage-") as folder:
        rig = ScaleRig(Path(folder), db="postgresql")
        rig.portal["usage"] = {"prometheus_url": prometheus.url, "cluster_seconds": 5, "accounting_seconds": 5}
        rig.portal["hub"] = {**rig.portal.get("hub", {}), "admin_users": ["ops"]}  # the status page's reader
        rig.start()
        try:
            prometheus.start(rig.hub.url.removeprefix("http://"))
            names = user_names(max(users, sessions))
            rig.create_users(names)
            print(f"{sessions} sessions in waves of 50", flush=True)
            waves, failures = start_waves(rig, names[:sessions], 50)
            if failures:
                raise RuntimeError(f"{len(failures)} sessions did not start: {failures[:3]}")
            admin = FormBrowser(rig.hub.url)
            assert admin.login("ops", "any")[0] == 302
            rig.wait_for(prometheus.scraped, 60, "Prometheus scraping the hub")
            time.sleep(30)  # a few scrapes, so the page's ranges hold points

            def scrape() -> int:
                return json_request("GET", f"{rig.hub.url}/hub/metrics", token=ADMIN_TOKEN)[0]

            metrics = timed(scrape, repeat)
            size = len(json_request("GET", f"{rig.hub.url}/hub/metrics", token=ADMIN_TOKEN)[1])
            status = timed(lambda: admin.get("/hub/dsportal/status")[0], repeat)
            week = timed(lambda: admin.get("/hub/dsportal/status?range=7d")[0], repeat)
            first, again = [], []
            for name in names[: min(20, sessions)]:
                person = FormBrowser(rig.hub.url)
                assert person.login(name, "any")[0] == 302
                time.sleep(5.1)  # past usage.accounting_seconds: this view asks Slurm's accounting anew
                first += timed(lambda p=person: p.get("/hub/dsportal/usage")[0], 1)
                again += timed(lambda p=person: p.get("/hub/dsportal/usage")[0], 4)
        finally:
            prometheus.stop()
            rig.stop()
    print(f"\nthe usage pages with {sessions} sessions running (waves ready in {percentile(waves, 50):.1f} s p50):")
    print(f"  GET /hub/metrics (a scrape, {size / 1024:.0f} KiB): {ms(metrics, 50)} p50, {ms(metrics, 99)} p99")
    print(
        f"  the status page, 24 h: {ms(status, 50)} p50, {ms(status, 99)} p99; 7 days: {ms(week, 50)} / {ms(week, 99)}"
    )
    print(f"  a usage page, the accounting asked anew ({len(first)} users): {ms(first, 50)} p50, {ms(first, 99)} p99")
    print(f"  a usage page, the accounting's answer reused: {ms(again, 50)} p50, {ms(again, 99)} p99")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=0, help="the pages on the scale rig with this many sessions")
    parser.add_argument("--users", type=int, default=1000, help="users in the rig's hub")
    parser.add_argument("--repeat", type=int, default=50, help="requests of each page")
    args = parser.parse_args()
    if args.sessions:
        pages(args.sessions, args.users, args.repeat)
    else:
        sampling(args.samples)


if __name__ == "__main__":
    main()

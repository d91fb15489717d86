"""Benchmark: what the activity and usage reporting costs one session, on the real dev cluster.

One idle session (1 GPU: the stand-in driver answers NVML) is watched for
`--seconds` while a stand-in for an open JupyterLab tab asks what the
portal's extension asks (the clock every 60 s, the GPUs every 10 s).
Prints the session server's CPU seconds per hour (its own process: the
activity checks, the NVML readings, the reports) and the activity reports
per minute the hub received (JupyterHub's own request metric).  Asserts
nothing about speed.

    /opt/dsportal/venv/bin/python -m tests.perf.bench_activity [--seconds 120]   (from the repository's root)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import time

from tests.support.cluster import Cluster, one_session

USER = "alice"


def server_pid(user: str) -> int:
    """The session's Jupyter server: the job's main process (the job script execs it)."""
    out = subprocess.run(
        ["pgrep", "-n", "-u", user, "-f", "bin/dsportal-singleuser"], capture_output=True, text=True, timeout=30
    ).stdout.split()
    if not out:
        raise RuntimeError(f"no dsportal-singleuser process of {user}")
    return int(out[0])


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = subprocess.run(["getconf", "CLK_TCK"], capture_output=True, text=True, timeout=10).stdout
    return (int(fields[11]) + int(fields[12])) / int(ticks)  # utime + stime


def activity_reports(cluster: Cluster) -> float:
    text = cluster.request("GET", "/hub/metrics")[1]
    found = re.findall(
        r'jupyterhub_request_duration_seconds_count\{code="200",handler="[a-z.]*ActivityAPIHandler",'
        r'method="POST"\} ([0-9.e+]+)',
        text,
    )
    return sum(float(n) for n in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    args = parser.parse_args()
    with one_session(USER, {"gpus": 1, "hours": 1}) as cluster:
        pid = server_pid(USER)
        time.sleep(10)  # past the start's own work
        results = [watch(cluster, pid, args.seconds, in_use) for in_use in (False, True)]
    for in_use, (elapsed, requests, cpu, reports) in zip((False, True), results, strict=True):
        print(
            f"activity and usage reporting, one session {'in use' if in_use else 'idle'}, watched {elapsed:.0f} s "
            f"({requests} requests from the stand-in JupyterLab tab):"
        )
        print(f"  session server CPU: {cpu:.2f} s, {cpu * 3600 / elapsed:.1f} CPU seconds per hour")
        print(f"  activity reports to the hub: {reports:.0f}, {reports * 60 / elapsed:.1f} per minute")


def watch(cluster: Cluster, pid: int, seconds: float, in_use: bool) -> tuple[float, int, float, float]:
    """What a stand-in tab asks (GPUs every 10 s, the clock every minute; the user's use every 20 s if in use)."""
    cpu0, reports0, t0 = cpu_seconds(pid), activity_reports(cluster), time.monotonic()
    requests = 0
    while time.monotonic() - t0 < seconds:
        cluster.request("GET", f"/user/{USER}/dsportal/session/gpus")
        requests += 1
        if requests % 6 == 1:
            cluster.request("GET", f"/user/{USER}/dsportal/session/clock")
            requests += 1
        if in_use and requests % 2 == 0:
            cluster.request("POST", f"/user/{USER}/dsportal/session/activity", {})
            requests += 1
        time.sleep(10)
    elapsed = time.monotonic() - t0
    return elapsed, requests, cpu_seconds(pid) - cpu0, activity_reports(cluster) - reports0


if __name__ == "__main__":
    main()

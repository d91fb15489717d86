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

from tests.support.cluster import TOKEN_FILE, Cluster

USER = "alice"


def server_pid(job_id: str) -> int:
    """The session's Jupyter server: the job's batch process (the job script execs it)."""
    out = subprocess.run(["scontrol", "listpids", job_id], capture_output=True, text=True, timeout=30).stdout
    for line in out.splitlines()[1:]:
        pid = line.split()[0]
        if pid.isdigit():
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            if "dsportal-singleuser" in cmd:
                return int(pid)
    raise RuntimeError(f"no dsportal-singleuser process in job {job_id}: {out}")


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = subprocess.run(["getconf", "CLK_TCK"], capture_output=True, text=True, timeout=10).stdout
    return (int(fields[11]) + int(fields[12])) / int(ticks)  # utime + stime


def activity_reports(cluster: Cluster) -> float:
    text = cluster.request("GET", "/hub/metrics")[1]
    found = re.findall(r'jupyterhub_request_duration_seconds_count\{code="200",handler="UserActivityAPIHandler",'
                       r'method="POST"\} ([0-9.e+]+)', text)
    return sum(float(n) for n in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    args = parser.parse_args()
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    cluster.clean()
    cluster.start(USER, {"gpus": 1, "hours": 1})
    cluster.wait_ready(USER)
    try:
        pid = server_pid(cluster.job_of(USER))
        time.sleep(10)  # past the start's own work
        cpu0, reports0, t0 = cpu_seconds(pid), activity_reports(cluster), time.monotonic()
        tab_requests = 0
        while time.monotonic() - t0 < args.seconds:
            cluster.request("GET", f"/user/{USER}/dsportal/session/gpus")
            tab_requests += 1
            if tab_requests % 6 == 1:
                cluster.request("GET", f"/user/{USER}/dsportal/session/clock")
                tab_requests += 1
            time.sleep(10)
        elapsed = time.monotonic() - t0
        cpu, reports = cpu_seconds(pid) - cpu0, activity_reports(cluster) - reports0
    finally:
        cluster.stop(USER)
    print(f"activity and usage reporting, one idle session watched {elapsed:.0f} s "
          f"({tab_requests} requests from the stand-in JupyterLab tab):")
    print(f"  session server CPU: {cpu:.2f} s, {cpu * 3600 / elapsed:.1f} CPU seconds per hour")
    print(f"  activity reports to the hub: {reports:.0f}, {reports * 60 / elapsed:.1f} per minute")


if __name__ == "__main__":
    main()

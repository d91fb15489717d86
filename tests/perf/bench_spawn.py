"""Benchmark: spawn-to-ready of one portal session on the idle dev cluster, next to a bare
jupyterhub-singleuser start on the same machine in the same run, and what each holds in memory
once idle (RSS and PSS of the job's processes; of the bare server), and spawn-to-ready of a second, named
session while the user's first one runs.  Prints numbers; asserts
nothing about speed (shared machines are noisy).

    /opt/dsportal/venv/bin/python -m tests.perf.bench_spawn [--runs 5]     (from the repository's root)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

from tests.perf.memory import MiB, idle_footprint, job_pids, user_tree_pids
from tests.perf.timeline import hub_marks, job_marks, timeline
from tests.support.cluster import TOKEN_FILE, Cluster
from tests.support.hosts import HEAD_ADDRESS
from tests.support.http import answers, free_port, wait_until

USER = "alice"
VENV = Path("/opt/dsportal/venv")


HUB_LOG = Path("/var/log/dsportal-dev/jupyterhub.out")


def spawn_to_ready(cluster: Cluster, memory: list) -> tuple[float, list[tuple[str, float, float]]]:
    """Seconds from asking until the hub says ready, and the start's timeline (tests/perf/timeline.py);
    the idle session's (RSS, PSS, processes) appended to `memory`."""
    asked, started = time.time(), time.perf_counter()
    assert cluster.start(USER, {"gpus": 1, "hours": 1}) in (201, 202)
    while not (cluster.server(USER) or {}).get("ready"):
        assert time.perf_counter() - started < 120, "session did not become ready"
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    job_id = cluster.job_of(USER)
    job_log = Path(f"/home/{USER}/.dsportal-session-{job_id}.log")
    marks = hub_marks(HUB_LOG.read_text(errors="replace"), USER, job_id)
    marks.update(job_marks(job_log.read_text(errors="replace")))
    cluster.wait(lambda: "dsportal: kernels:" in job_log.read_text(errors="replace"), 30, "the kernelspecs written")
    memory.append(idle_footprint(lambda: job_pids(USER, job_id)))
    cluster.stop(USER)
    return elapsed, timeline(asked, marks, asked + elapsed)


def second_to_ready(cluster: Cluster) -> float:
    """Seconds from asking for a second, named session while the user's first runs until the hub says it is ready
    (both stopped afterwards)."""
    assert cluster.start(USER, {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready(USER)
    started = time.perf_counter()
    status, _ = cluster.request("POST", f"/hub/api/users/{USER}/servers/second", {"gpus": 1, "hours": 1})
    assert status in (201, 202), status
    while not (cluster.server(USER, "second") or {}).get("ready"):
        assert time.perf_counter() - started < 120, "the second session did not become ready"
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    cluster.stop_named(USER, "second")
    cluster.stop(USER)
    return elapsed


def bare_singleuser(memory: list) -> float:
    """jupyterhub-singleuser run directly as the user, until its API answers; its idle (RSS, PSS, processes)
    appended to `memory`."""
    port = free_port()
    env = {
        "PATH": f"{VENV}/bin:/usr/bin:/bin",
        "HOME": f"/home/{USER}",
        "USER": USER,
        "LANG": "C.UTF-8",
        "JUPYTERHUB_API_TOKEN": "bench-not-a-real-token",
        "JUPYTERHUB_API_URL": f"http://{HEAD_ADDRESS}:8081/hub/api",  # the hub, at the head's cluster address
        "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}/user/{USER}/",
        "JUPYTERHUB_USER": USER,
        "JUPYTERHUB_SERVICE_PREFIX": f"/user/{USER}/",
        "JUPYTERHUB_BASE_URL": "/",
        "JUPYTERHUB_CLIENT_ID": f"jupyterhub-user-{USER}",
        "JUPYTERHUB_OAUTH_CALLBACK_URL": f"/user/{USER}/oauth_callback",
    }
    argv = ["sudo", "-n", "--preserve-env=" + ",".join(env), "-u", USER, "--", f"{VENV}/bin/jupyterhub-singleuser"]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env={**env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    try:
        url = f"http://127.0.0.1:{port}/user/{USER}/api"
        wait_until(lambda: answers(url, proc, "jupyterhub-singleuser"), 60, "jupyterhub-singleuser answering", 0.05)
        elapsed = time.perf_counter() - started
        memory.append(idle_footprint(lambda: user_tree_pids(proc.pid, USER)))
        return elapsed
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    cluster.clean()
    portal, bare, timelines, portal_memory, bare_memory, second = [], [], [], [], [], []
    for _ in range(runs):
        bare.append(bare_singleuser(bare_memory))
        elapsed, rows = spawn_to_ready(cluster, portal_memory)
        portal.append(elapsed)
        timelines.append(rows)
        second.append(second_to_ready(cluster))
    p, b = statistics.median(portal), statistics.median(bare)
    median_run = min(range(runs), key=lambda i: abs(portal[i] - p))
    slowest_run = max(range(runs), key=lambda i: portal[i])
    for name, run in (("median", median_run), ("slowest", slowest_run)):
        print(f"bench spawn timeline of the {name} run ({portal[run]:.2f} s), seconds since the start was asked:")
        for mark, since_asked, step in timelines[run]:
            print(f"  {mark:<18} {since_asked:6.2f}  (+{step:.2f})")
    print(
        f"bench spawn-to-ready (portal, 1 GPU, idle cluster): median {p:.2f} s  runs {' '.join(f'{x:.2f}' for x in portal)}"
    )
    print(
        f"bench bare jupyterhub-singleuser start:              median {b:.2f} s  runs {' '.join(f'{x:.2f}' for x in bare)}"
    )
    print(f"bench ratio portal / bare: {p / b:.2f}")
    s2 = statistics.median(second)
    print(
        f"bench spawn-to-ready of a second session beside a running one: median {s2:.2f} s  "
        f"runs {' '.join(f'{x:.2f}' for x in second)}"
    )
    for what, name in ((0, "RSS"), (1, "PSS")):
        pm = statistics.median(m[what] for m in portal_memory) / MiB
        bm = statistics.median(m[what] for m in bare_memory) / MiB
        print(
            f"bench idle memory {name}: portal session {pm:.0f} MiB ({portal_memory[0][2]} processes), "
            f"bare server {bm:.0f} MiB ({bare_memory[0][2]}); portal / bare {pm / bm:.2f}"
        )


if __name__ == "__main__":
    main()

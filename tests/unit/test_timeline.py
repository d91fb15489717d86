"""The spawn benchmark's timeline (tests/perf/timeline.py) read from sample logs."""

from __future__ import annotations

from datetime import datetime

from tests.perf.timeline import hub_marks, in_order, job_marks, page_marks, timeline

HUB_LOG = """\
[I 2026-11-23 14:35:25.911 JupyterHub spawner:244] Submitting session of alice (1 GPU): sudo -n ...
[I 2026-11-23 14:35:25.924 JupyterHub spawner:260] Session job 63 submitted for alice
[I 2026-11-23 14:35:26.000 JupyterHub log:192] 200 GET /hub/api/users/alice (devcluster-admin@127.0.0.1) 5.00ms
[I 2026-11-23 14:35:29.752 JupyterHub portapi:79] Session of alice reported port 46501
[I 2026-11-23 14:35:29.783 JupyterHub spawner:420] Session job 63 of alice: JupyterLab at node001:46501
"""
JOB_LOG = """\
dsportal: job 63 of alice on node001 since 2026-11-23T14:35:26.500+00:00; GPUs: 1
dsportal: prepared at 2026-11-23T14:35:26.900+00:00
[I 2026-11-23 14:35:28.675 ServerApp] jupyter_lsp | extension was successfully linked.
[I 2026-11-23 14:35:29.600 ServerApp] Jupyter Server 2.21.1 is running at:
[I 2026-11-23 14:35:29.610 ServerApp] http://0.0.0.0:46501/user/alice/lab?token=...
"""


def local(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").timestamp()


def utc(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_the_hubs_marks_of_one_job():
    assert hub_marks(HUB_LOG, "alice", "63") == {
        "sbatch returned": local("2026-11-23 14:35:25.924"),
        "port reported": local("2026-11-23 14:35:29.752"),
        "readiness proven": local("2026-11-23 14:35:29.783"),
    }
    assert hub_marks(HUB_LOG, "alice", "64") == {}  # another job: nothing of it is in this log


def test_the_sessions_own_marks():
    assert job_marks(JOB_LOG) == {
        "job script runs": utc("2026-11-23T14:35:26.500+00:00"),
        "preparation done": utc("2026-11-23T14:35:26.900+00:00"),
        "server imported": local("2026-11-23 14:35:28.675"),
        "listening": local("2026-11-23 14:35:29.600"),
    }


def test_the_timeline_is_in_order_with_the_steps_between():
    rows = timeline(10.0, {"sbatch returned": 10.5, "listening": 12.0}, ready=13.0)
    assert rows == [("sbatch returned", 0.5, 0.5), ("listening", 2.0, 1.5), ("hub says ready", 3.0, 1.0)]


def test_the_hub_says_ready_once_the_job_is_submitted():
    log = HUB_LOG + "[I 2026-11-23 14:35:29.801 JupyterHub base:1192] User alice took 3.890 seconds to start\n"
    earlier = "[I 2026-11-23 14:30:00.000 JupyterHub base:1192] User alice took 2.000 seconds to start\n"
    assert hub_marks(earlier + log, "alice", "63")["hub says ready"] == local("2026-11-23 14:35:29.801")


def test_the_browsers_marks_from_its_own_timings():
    times = {"origin": 1_000_000.0, "received": 120.0, "firstApi": 950.0, "drawn": 1_001_900.0}
    assert page_marks(times) == {
        "page leaves for lab": 1000.0,
        "lab page received": 1000.12,
        "scripts run": 1000.95,
        "launcher drawn": 1001.9,
    }
    assert page_marks({"origin": 2000.0, "received": None, "firstApi": None, "drawn": None}) == {
        "page leaves for lab": 2.0
    }


def test_marks_from_several_sources_are_put_in_the_order_they_happened():
    rows = in_order(10.0, {"launcher drawn": 14.0, "Start clicked": 10.0, "listening": 12.5})
    assert rows == [("Start clicked", 0.0, 0.0), ("listening", 2.5, 2.5), ("launcher drawn", 4.0, 1.5)]

"""The hub's side of what sessions used: the ended session's summary and log, Slurm's numbers filled in, the
cluster's metrics, Prometheus's answers, the status and usage pages' data and plots (all pure)."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from spawner.hub.request.resources import Resources
from spawner.hub.session.usagelog import (
    add_to_log,
    allocation_of,
    gpu_hours,
    hours_left,
    log_entry,
    session_hours,
    session_usage,
)
from spawner.hub.usage import charts
from spawner.hub.usage.accounting import fill, waiting
from spawner.hub.usage.clustermetrics import new_waits, partition_gpus, pending_jobs
from spawner.hub.usage.prometheus import PrometheusDown, Series, range_url, read_answer
from spawner.hub.usage.status import figures, gpus_now, heavy_users
from spawner.hub.usage.userusage import daily_gpu_hours, gpu_hours_between, split_gpu_hours, usage_page
from spawner.slurmaccounting import UsedJob
from spawner.slurmvocab import ListedJob, NodeState
from spawner.usage import GpuTally, UsageTally

ENDED = datetime(2026, 11, 24, 12, 0)
TWO_GPUS = Resources(partition="sxm2", gpus=2, cpus=16, memory_mib=98304, minutes=480)
REPORT = UsageTally(
    gpus=[
        GpuTally(0, samples=10, memory_peak_mib=300, memory_total_mib=32768),
        GpuTally(1, 10, 10, 800, 90, 4000, 32768),
    ],
    samples=10,
    idle_samples=0,
    cpu_seconds=7200,
    memory_peak_mib=4096,
    seconds=3600,
).to_dict()
JOB = UsedJob(
    "42", "alice", "sxm2", "COMPLETED", "2026-11-24T11:00:00", "2026-11-24T12:00:00", 3600, 28800.0, 16, 2, 98304, 20480
)


def test_an_ended_sessions_usage_keeps_its_tally_and_allocation_for_slurms_numbers_later():
    usage = session_usage(REPORT, allocation_of(TWO_GPUS))
    assert usage["advice"] == "1 of 2 GPUs did work; next time ask for 1."
    assert (usage["source"], usage["cpu_efficiency"], usage["tally"], usage["given"]) == (
        "session",
        12,
        REPORT,
        {"gpus": 2, "cpus": 16, "memory_mib": 98304, "per_gpu": 0},
    )
    assert gpu_hours(2, session_hours("2026-11-24T11:00:00", "", ENDED), usage) == (2.0, 0.8)
    assert log_entry("42", ENDED, "sxm2", usage, allocation_of(TWO_GPUS), 1.0) == {
        "job_id": "42",
        "ended": "2026-11-24T12:00",
        "partition": "sxm2",
        "gpus": 2,
        "gpu_mean": 40,
        "gpus_worked": 1,
        "cpu_efficiency": 12,
        "hours": 1.0,
        "gpu_hours": 2.0,
        "accounted": False,
    }
    assert session_usage({}, allocation_of(None))["source"] == "none"
    assert session_usage({"samples": "many"}, allocation_of(TWO_GPUS))["source"] == "none"  # a bad saved report


def test_a_forged_report_counts_no_more_than_the_hub_saw_and_the_session_was_given():
    # alice's session reports 4 GPUs at 100 % for 1,000 hours; the hub gave it 2 GPUs for an hour
    forged = UsageTally(
        gpus=[GpuTally(i, 10, 10, 1000, 100) for i in range(4)], samples=10, seconds=3.6e6, cpu_seconds=1e12
    ).to_dict()
    usage = session_usage(forged, allocation_of(TWO_GPUS))
    assert gpu_hours(2, session_hours("2026-11-24T11:00:00", "", ENDED), usage) == (2.0, 2.0)


def test_a_session_that_reports_nothing_or_an_empty_tally_still_counts_its_gpu_hours_in_full():
    # alice's session sends {} every half second: its tally reads, with no seconds and no GPUs
    empty = UsageTally.from_dict({}).to_dict()
    for reported in ({}, empty):
        usage = session_usage(reported, allocation_of(TWO_GPUS))
        assert gpu_hours(2, 1.5, usage) == (3.0, 0.0)  # the hub's GPUs x hours; nothing busy, self-reported
        entry = log_entry("42", ENDED, "sxm2", usage, allocation_of(TWO_GPUS), 1.5)
        assert (entry["gpus"], entry["hours"], entry["gpu_hours"], entry["gpu_mean"]) == (2, 1.5, 3.0, None)
    # a tally of a longer session than the hub saw adds busy hours only for the hours the hub saw
    assert gpu_hours(2, 0.5, session_usage(REPORT, allocation_of(TWO_GPUS))) == (1.0, 0.4)  # 0 % and 80 %
    assert gpu_hours(2, -1.0, session_usage(REPORT, allocation_of(TWO_GPUS))) == (0.0, 0.0)


def test_a_sessions_hours_are_the_hubs_from_its_start_to_its_end():
    assert session_hours("2026-11-24T11:30:00", "2026-11-24T10:00", ENDED) == 0.5  # seen running at 11:30
    # not seen running (a record of an older hub): from its submission, a minute added (it is to the minute)
    assert session_hours("", "2026-11-24T11:00", ENDED) == pytest.approx(61 / 60)
    assert session_hours("", "", ENDED) == session_hours("not a time", "nor this", ENDED) == 0.0
    assert session_hours("2026-11-24T12:30:00", "", ENDED) == 0.0  # a clock set back: never negative


def test_a_tally_whose_seconds_are_nearly_none_makes_a_summary_not_an_error():
    # seconds of 5e-324 once made an infinite CPU share, and round(inf) raised in the hub's poll and stop
    assert UsageTally.from_dict({"cpu_seconds": 1e12, "seconds": 5e-324}).seconds == 5e-324
    usage = session_usage({"cpu_seconds": 1e12, "seconds": 5e-324}, allocation_of(TWO_GPUS))
    assert (usage["cpu_efficiency"], usage["lines"][0]) == (100, "CPU: 100% of 16 cores over under 1 min")
    with pytest.raises(ValueError, match="seconds cannot be less than 1 s for each sample"):
        UsageTally.from_dict({"samples": 10, "seconds": 5})


def test_slurms_numbers_are_filled_into_the_history_and_the_log_once_the_job_has_ended():
    history = [{"job_id": "42", "ended": "2026-11-24T12:00", "usage": session_usage(REPORT, allocation_of(TWO_GPUS))}]
    # the hub counted 1.9 GPU-hours (it saw the job run 57 min); Slurm's accounting says 2 x 1 h
    log = [log_entry("42", ENDED, "sxm2", history[0]["usage"], allocation_of(TWO_GPUS), 0.95)]
    assert waiting(history, log, ENDED, 31) == {"42"}
    later = datetime(2026, 11, 24, 12, 0, 30)  # JOB ended at 12:00:00
    assert fill(history, log, {"42": UsedJob(**{**JOB.__dict__, "end": ""})}, "alice", later) == (False, 0.0)  # runs
    # the same id as another user's job (Slurm's ids started again): not alice's numbers
    assert fill(history, log, {"42": UsedJob(**{**JOB.__dict__, "user": "bob"})}, "alice", later) == (False, 0.0)
    # ended a moment ago: its steps' figures may still be on their way to slurmdbd (the batch step's CPU time)
    assert fill(history, log, {"42": JOB}, "alice", datetime(2026, 11, 24, 12, 0, 29)) == (False, 0.0)
    changed, beyond = fill(history, log, {"42": JOB}, "alice", later)
    assert changed and beyond == pytest.approx(0.1)  # what the metrics' counter gains
    usage = history[0]["usage"]
    assert (usage["source"], usage["cpu_efficiency"], usage["memory_peak_mib"]) == ("slurm", 50, 20480)
    assert usage["advice"] == "1 of 2 GPUs did work; next time ask for 1."  # the GPUs are still the session's
    assert (log[0]["cpu_efficiency"], log[0]["accounted"], log[0]["hours"], log[0]["gpu_hours"]) == (50, True, 1.0, 2.0)
    assert waiting(history, log, ENDED, 31) == set()
    assert fill(history, log, {"42": JOB}, "alice", later) == (False, 0.0)
    assert waiting(history, log, datetime(2027, 1, 1), 31) == set()  # too old to wait for


def test_the_usage_log_keeps_the_newest_once_each():
    log = [{"job_id": str(i)} for i in range(5)]
    assert add_to_log(log, {"job_id": "3", "new": True}, keep=3) == [
        {"job_id": "3", "new": True},
        {"job_id": "0"},
        {"job_id": "1"},
    ]


def test_hours_left_of_a_culled_session():
    assert hours_left("2026-11-24T15:30:00", ENDED) == 3.5
    assert (hours_left("", ENDED), hours_left("2026-11-24T11:00:00", ENDED)) == (0.0, 0.0)


def node(name, partition, state, gpus, used):
    return NodeState(name, partition, state, gpus, used, 8, 32, 196608, 0)


def listed(job_id, state, partition, submitted="", start=""):
    return ListedJob(job_id, "alice", state, partition, 1, "", "", "", "", submitted, start, "")


def test_gpus_per_partition_and_the_queue_from_sinfo_and_squeue():
    nodes = [node("n1", "sxm2", "mixed", 4, 3), node("n2", "sxm2", "down*", 4, 0), node("n1", "debug", "mixed", 4, 3)]
    assert partition_gpus(nodes, ["sxm2", "debug"]) == {
        ("sxm2", "allocated"): 3,
        ("sxm2", "free"): 1,
        ("sxm2", "down"): 4,
        ("debug", "allocated"): 3,
        ("debug", "free"): 1,
        ("debug", "down"): 0,
    }
    jobs = [listed("1", "PENDING", "sxm2"), listed("2", "PENDING", "debug,sxm2"), listed("3", "RUNNING", "sxm2")]
    assert pending_jobs(jobs, ["sxm2", "debug"]) == {"sxm2": 1, "debug": 1}


def test_a_jobs_wait_counts_once_when_it_is_first_seen_running_lately():
    now = datetime(2026, 11, 24, 12, 0)
    jobs = [
        listed("1", "RUNNING", "sxm2", "2026-11-24T11:50:00", "2026-11-24T11:58:00"),
        listed("2", "RUNNING", "sxm2", "2026-11-24T08:00:00", "2026-11-24T09:00:00"),  # started long ago
        listed("3", "PENDING", "sxm2", "2026-11-24T11:00:00", "2026-11-24T13:00:00"),
    ]
    waits, seen = new_waits(jobs, set(), now)
    assert (waits, seen) == ([("sxm2", 480.0)], {"1", "2"})
    assert new_waits(jobs, seen, now) == ([], {"1", "2"})


def test_prometheus_answers_read_into_series_and_an_error_into_words():
    matrix = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"partition": "sxm2"}, "values": [[1000, "1"], [1300, "NaN"], [1600, "2.5"]]}],
        },
    }
    assert read_answer(json.dumps(matrix).encode()) == [Series({"partition": "sxm2"}, [(1000.0, 1.0), (1600.0, 2.5)])]
    vector = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [5, "3"]}]}}
    assert read_answer(json.dumps(vector).encode()) == [Series({}, [(5.0, 3.0)])]
    with pytest.raises(PrometheusDown, match="refused the question: parse error"):
        read_answer(b'{"status": "error", "error": "parse error"}')
    with pytest.raises(PrometheusDown, match="not its API's JSON"):
        read_answer(b"<html>")
    assert range_url("http://p:9090/", "up", 0, 3600, 300) == (
        "http://p:9090/api/v1/query_range?query=up&start=0&end=3600&step=300"
    )


def test_the_status_pages_tables_from_the_last_readings():
    gpus = [
        Series({"partition": "sxm2", "state": "allocated"}, [(0, 1), (300, 3)]),
        Series({"partition": "sxm2", "state": "free"}, [(0, 7), (300, 5)]),
        Series({"partition": "sxm2", "state": "down"}, [(300, 0)]),
    ]
    assert gpus_now(gpus) == [{"partition": "sxm2", "allocated": 3, "free": 5, "down": 0}]
    hours = [Series({"user": u}, [(0, h)]) for u, h in [("alice", 10), ("bob", 4), ("carol", 0.001), ("dave", 8)]]
    busy = [Series({"user": u}, [(0, h)]) for u, h in [("alice", 9), ("bob", 1), ("dave", 2)]]
    assert heavy_users(hours, busy) == [
        {"user": "dave", "gpu_hours": 8, "efficiency": 25},  # of two as wasteful, the heavier first
        {"user": "bob", "gpu_hours": 4, "efficiency": 25},
        {"user": "alice", "gpu_hours": 10, "efficiency": 90},
    ]
    answers = {
        "gpus": gpus,
        "queue": [],
        "wait_p50": [Series({"partition": "sxm2"}, [(0, 120)])],
        "wait_p90": [],
        "sessions": [],
        "culled": [Series({"partition": "sxm2"}, [(0, 1.5)])],
        "user_hours": hours,
        "user_busy": busy,
    }
    drawn = figures(answers)
    assert sorted(drawn) == ["culled", "gpus", "queue", "sessions", "users", "waits"]
    assert [t["name"] for t in drawn["gpus"]["data"]] == ["sxm2 allocated", "sxm2 free"]
    assert drawn["waits"]["data"][0]["y"] == [2.0]  # minutes
    assert drawn["users"]["data"][0]["x"] == ["dave", "bob", "alice"]
    assert drawn["culled"]["data"][0] == {"type": "bar", "name": "GPU-hours", "x": ["sxm2"], "y": [1.5]}


def test_a_user_whose_sessions_reported_nothing_ranks_first_and_a_forged_busy_share_stops_at_100():
    hours = [Series({"user": u}, [(0, h)]) for u, h in [("alice", 0.02), ("bob", 4), ("dave", 1)]]
    busy = [Series({"user": u}, [(0, h)]) for u, h in [("bob", 3), ("dave", 5)]]  # alice: none reported
    assert heavy_users(hours, busy) == [
        {"user": "alice", "gpu_hours": 0.02, "efficiency": 0},
        {"user": "bob", "gpu_hours": 4, "efficiency": 75},
        {"user": "dave", "gpu_hours": 1, "efficiency": 100},
    ]


def test_a_line_plot_is_plotly_json():
    figure = charts.lines("T", "GPUs", {"a": [(0, 1.0)]})
    assert figure["data"] == [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "marker": {"size": 4},
            "name": "a",
            "x": [charts.local_time(0)],
            "y": [1.0],
        }
    ]
    assert figure["layout"]["title"]["text"] == "T"


def test_gpu_hours_this_week_count_the_part_of_each_job_inside_it():
    now = datetime(2026, 11, 24, 12, 0)
    jobs = [
        JOB,  # 2 GPUs, 11:00-12:00
        UsedJob("7", "alice", "sxm2", "RUNNING", "2026-11-24T10:00:00", "", 7200, 0.0, 8, 1, 49152, 0),  # still running
        UsedJob(
            "8", "alice", "sxm2", "COMPLETED", "2026-11-10T00:00:00", "2026-11-18T00:00:00", 691200, 0.0, 8, 1, 0, 0
        ),
        UsedJob("9", "alice", "sxm2", "COMPLETED", "2026-11-24T09:00:00", "2026-11-24T10:00:00", 3600, 0.0, 4, 0, 0, 0),
    ]
    assert gpu_hours_between(jobs, datetime(2026, 11, 17, 12, 0), now) == 2 + 2 + 12
    days = daily_gpu_hours(jobs, now, days=2)
    assert days == [("2026-11-23", 0.0), ("2026-11-24", 4.0)]


def test_the_usage_page_without_accounting_keeps_the_sessions_own_numbers():
    log = [log_entry("42", ENDED, "sxm2", session_usage(REPORT, allocation_of(TWO_GPUS)), allocation_of(TWO_GPUS), 1.0)]
    page = usage_page(None, log, ENDED, "no accounting")
    assert (page["error"], page["week_gpu_hours"], sorted(page["figures"])) == ("no accounting", None, ["efficiency"])
    assert page["figures"]["efficiency"]["data"][0]["y"] == [40]
    assert (page["sessions"][0]["gpus_worked"], page["sessions"][0]["length"]) == (1, "1.0 h")
    assert [t["mode"] for t in page["figures"]["efficiency"]["data"]] == ["lines+markers", "markers"]
    full = usage_page([JOB], log, ENDED, "")
    assert (full["week_gpu_hours"], full["month_gpu_hours"], sorted(full["figures"])) == (
        2.0,
        2.0,
        ["daily", "efficiency"],
    )


def test_gpu_hours_split_by_account_and_type_most_used_first():
    def job(job_id, account, kind, gpus, start, end="2026-11-24T12:00:00"):
        return UsedJob(job_id, "alice", "sxm2", "COMPLETED", start, end, 0, 0, 8, gpus, 0, 0, account, kind)

    jobs = [
        job("1", "vision", "a100", 2, "2026-11-24T10:00:00"),  # 4 GPU-hours this week
        job("2", "vision", "a100", 1, "2026-11-10T10:00:00", "2026-11-10T11:00:00"),  # 1, weeks ago
        job("3", "nlp", "v100", 1, "2026-11-24T11:00:00", ""),  # still running: 1 h until now
        job("4", "nlp", "", 4, "2026-11-24T11:30:00"),  # untyped accounting: 2
        job("5", "nlp", "v100", 0, "2026-11-24T11:00:00"),  # no GPU: not a row
        job("6", "old", "a100", 1, "2026-09-01T10:00:00", "2026-09-01T11:00:00"),  # beyond 30 days
    ]
    labels = {"a100": "A100 80 GB"}
    assert split_gpu_hours(jobs, ENDED, lambda kind: labels.get(kind, kind)) == [
        {"account": "vision", "gpu_type": "A100 80 GB", "week": 4.0, "month": 5.0},
        {"account": "nlp", "gpu_type": "GPUs", "week": 2.0, "month": 2.0},
        {"account": "nlp", "gpu_type": "v100", "week": 1.0, "month": 1.0},
    ]
    assert usage_page(jobs, [], ENDED, "")["split"] == split_gpu_hours(jobs, ENDED)
    assert usage_page(None, [], ENDED, "down")["split"] == []


def test_the_grafana_dashboard_asks_only_for_metrics_the_hub_serves():
    from pathlib import Path

    from prometheus_client import REGISTRY

    from spawner.hub.base.metrics import SessionCollector  # its import registers the portal's other metrics

    served = {metric.name for metric in REGISTRY.collect()}
    served |= {metric.name for metric in SessionCollector(list).describe()}  # registered by the running hub
    served |= {name + suffix for name in served for suffix in ("_total", "_bucket", "_count", "_sum")}
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "deploy/grafana/dsportal.json").read_text())
    asked = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b(dsportal_[a-z_]+)", target["expr"])
    }
    assert asked and asked <= served, asked - served
    # the status page's questions are the dashboard's too
    from spawner.hub.usage.status import queries

    page = {re.sub(r"\[(24h|7d)\]", "[$__range]", q) for q in queries("24h").values()}
    exprs = {target["expr"] for panel in dashboard["panels"] for target in panel["targets"]}
    assert {q for q in page if "user_" not in q} <= exprs

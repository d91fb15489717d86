"""The sweeps benchmark's pure parts (tests/perf/bench_sweeps.py) and the mock Slurm's job arrays."""

from __future__ import annotations

import json
import subprocess

from spawner.hub.runs.sweepboard import array_tasks
from spawner.slurmvocab import parse_all_jobs
from tests.perf.bench_sweeps import (
    calls_words,
    counted,
    delta,
    slurm_counts,
    sweep_notebook,
    sweep_options,
    task_fields,
    timing,
)
from tests.support.mockslurm import MockSlurm, array_ids, array_lines, compact

METRICS = """\
# HELP dsportal_slurm_command_seconds Duration of Slurm commands the hub runs
# TYPE dsportal_slurm_command_seconds histogram
dsportal_slurm_command_seconds_bucket{command="squeue",le="0.05"} 40.0
dsportal_slurm_command_seconds_count{command="squeue"} 42.0
dsportal_slurm_command_seconds_sum{command="squeue"} 1.5
dsportal_slurm_command_seconds_count{command="head"} 7.0
dsportal_slurm_command_failures_total{command="sacct",kind="unavailable"} 1.0
"""


def test_the_hubs_slurm_commands_are_read_from_its_metrics():
    assert slurm_counts(METRICS) == {"squeue": 42.0, "head": 7.0}
    assert slurm_counts("<html>403</html>") == {}


def test_commands_run_between_two_counts_and_per_minute_in_words():
    before = {"squeue": 10, "sacct": 2, "head": 0}
    after = {"squeue": 13, "sacct": 3, "head": 30}
    assert delta(before, after) == {"squeue": 3, "sacct": 1, "head": 30}
    assert delta({}, {"squeue": 1.0}) == {"squeue": 1.0, "sacct": 0, "head": 0}
    assert calls_words(delta(before, after), 30) == "squeue 3 (6.0/min), sacct 1 (2.0/min), head 30 (60.0/min)"
    assert calls_words({"squeue": 2}, 0) == "squeue 2 (0.0/min), sacct 0 (0.0/min), head 0 (0.0/min)"
    assert calls_words(None, 30) == "not counted (the hub's /hub/metrics did not answer)"


def test_timings_in_words():
    assert timing([0.010, 0.012, 0.030, 0.011]) == "median 12.0 ms, p95 30.0 ms (4 calls)"
    assert timing([]) == "no calls"


def test_the_mocks_calls_counted_by_command_head_only_through_sudo():
    calls = [
        {"cmd": "squeue", "argv": []},
        {"cmd": "squeue", "argv": []},
        {"cmd": "sacct", "argv": []},
        {"cmd": "sudo", "user": "alice", "argv": ["head", "-v", "-c", "4096", "--", "/a", "/b"]},
        {"cmd": "sudo", "user": "alice", "argv": ["tail", "-c", "10", "--", "/a"]},
        {"cmd": "sbatch", "argv": []},
    ]
    assert counted(calls) == {"squeue": 2, "sacct": 1, "head": 1}


def test_the_seeded_tasks_completed_first_then_running():
    fields = task_fields(running=2, completed=3)
    assert [f["state"] for f in fields.values()] == ["COMPLETED"] * 3 + ["RUNNING"] * 2
    assert list(fields) == [0, 1, 2, 3, 4]


def test_the_sweep_asked_for_is_one_array_over_seed_with_a_results_cell():
    options = sweep_options("bench/sweep.ipynb", 50, "cpu")
    assert options["sweep"] == {"grid": {"seed": {"values": list(range(50))}, "lr": {"value": 0.1}}, "at_once": 8}
    assert options["partition"] == "cpu"
    cells = json.loads(sweep_notebook())["cells"]
    assert [c["metadata"]["tags"] for c in cells] == [["parameters"], ["results"]]
    assert "results = {'score'" in cells[-1]["source"]


def test_an_array_spec_and_its_compact_listing():
    assert array_ids("0-999%8") == (list(range(1000)), 8)
    assert array_ids("0,3-5") == ([0, 3, 4, 5], 0)
    assert compact([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert compact([4]) == "4"


def test_an_array_is_listed_as_slurm_does_waiting_tasks_in_one_line():
    job = {
        "state": "PENDING",
        "reason": "JobArrayTaskLimit",
        "node": "",
        "array": {"ids": list(range(1000)), "at_once": 4},
    }
    job["tasks"] = {"0": {"state": "COMPLETED"}, "4": {"state": "RUNNING", "node": "gpu01"}, "1": {"state": "FAILED"}}
    lines = array_lines("178", job)
    assert [job_id for job_id, _ in lines] == ["178_[2-3,5-999%4]", "178_0", "178_1", "178_4"]
    assert [fields["state"] for _, fields in lines] == ["PENDING", "COMPLETED", "FAILED", "RUNNING"]
    assert lines[3][1]["node"] == "gpu01" and lines[3][1]["reason"] == "JobArrayTaskLimit"  # the array's, unless set
    assert array_tasks(lines[0][0]) == ("178", [2, 3, *range(5, 1000)])
    one_left = {**job, "array": {"ids": [0, 1], "at_once": 0}, "tasks": {"0": {"state": "COMPLETED"}}}
    assert [job_id for job_id, _ in array_lines("9", one_left)] == ["9_1", "9_0"]
    assert array_lines("7", {"state": "RUNNING"}) == [("7", {"state": "RUNNING"})]


def test_the_mock_queues_an_array_and_lists_it_compactly(tmp_path):
    mock = MockSlurm(tmp_path / "mock")
    submitted = subprocess.run(
        [mock.path("sbatch"), "--parsable", "--job-name=s.ipynb", "--partition=sxm2", "--array=0-9%2"],
        input="#!/bin/sh\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={"MOCKSLURM_USER": "alice", "PATH": "/usr/bin:/bin"},
    )
    job_id = submitted.stdout.strip()
    mock.set_tasks(job_id, {0: {"state": "RUNNING", "node": "gpu01"}})
    argv = [mock.path("squeue"), "--noheader", "--all", "--states=all", "--format=%i|%u|%T|%P|%D|%N|%M|%L|%l|%V|%S|%r"]
    listed = parse_all_jobs(subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout)
    assert [(j.job_id, j.state) for j in listed] == [(f"{job_id}_[1-9%2]", "PENDING"), (f"{job_id}_0", "RUNNING")]
    accounted = subprocess.run([mock.path("sacct")], capture_output=True, text=True, check=True, timeout=30).stdout
    assert [line.split("|")[0] for line in accounted.splitlines()] == [f"{job_id}_[1-9%2]", f"{job_id}_0"]

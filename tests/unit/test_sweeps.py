"""Sweeps' pure parts: the grid, the job array's sbatch line, the listing's array ids, the table and the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from portal.config import load_config
from portal.settings.runs import SweepSettings
from spawner import sweepgrid
from spawner.hub.base.notices import sweep_ended_mail
from spawner.hub.request.jobrequest import sbatch_argv
from spawner.hub.request.jobspec import Account
from spawner.hub.runs.grid import Sweep, SweepError, gpu_hours, parse_sweep, range_values
from spawner.hub.runs.jobscript import run_job, run_spec
from spawner.hub.runs.request import parse_run
from spawner.hub.runs.service import task_options
from spawner.hub.runs.sweepboard import (
    array_tasks,
    best_task,
    counts,
    counts_words,
    ended_words,
    read_results,
    task_states,
)
from spawner.hub.runs.sweeps import ended, fold_sweeps
from spawner.hub.slurm.client import split_heads
from spawner.job.runs import results
from spawner.job.runs.runner import NotebookRun, RunSpec, notebook_run
from spawner.notebookparams import Parameter
from spawner.slurmvocab import AccountedJob, ListedJob, parse_all_jobs
from tests.support.mockslurm import config_data

DECLARED = [
    Parameter("learning_rate", "float", "0.002"),
    Parameter("batch_size", "int", "32"),
    Parameter("epochs", "int", "3"),
    Parameter("name", "str", "'run'"),
]
LIMITS = SweepSettings()


def a_sweep(grid: dict, **more) -> Sweep:
    return parse_sweep({"grid": grid, "seed": 7, **more}, DECLARED, "work/train.ipynb", LIMITS)


def test_a_grid_is_every_combination_the_first_parameter_slowest():
    sweep = a_sweep({"learning_rate": {"values": [0.001, 0.01]}, "batch_size": {"values": [32, 64, 128]}})
    assert sweep.tasks == 6
    assert sweep.points() == [
        {"learning_rate": 0.001, "batch_size": 32},
        {"learning_rate": 0.001, "batch_size": 64},
        {"learning_rate": 0.001, "batch_size": 128},
        {"learning_rate": 0.01, "batch_size": 32},
        {"learning_rate": 0.01, "batch_size": 64},
        {"learning_rate": 0.01, "batch_size": 128},
    ]
    assert sweep.varied == ["learning_rate", "batch_size"]
    assert sweep.at_once == 6  # the admin's 8, no more than the tasks


def test_ranges_linear_and_log_whole_numbers_rounded_once_each():
    assert range_values({"from": 0.1, "to": 0.3, "steps": 3}, DECLARED[0]) == [0.1, 0.2, 0.3]
    assert range_values({"from": 32, "to": 256, "steps": 4, "scale": "log"}, DECLARED[1]) == [32, 64, 128, 256]
    assert range_values({"from": 1, "to": 2, "steps": 5}, DECLARED[1]) == [1, 2]
    assert range_values({"from": 1e-4, "to": 1e-2, "steps": 3, "scale": "log"}, DECLARED[0]) == [0.0001, 0.001, 0.01]


def test_the_grid_is_what_the_run_dialog_shows():
    # one table for both: spawner/labext/src/runs/sweep.ts is held to it too (src/__tests__/sweep.spec.ts)
    table = json.loads((Path(__file__).parents[1] / "data" / "sweepgrid.json").read_text())
    for case in table["ranges"]:
        spec = {key: case[key] for key in ("from", "to", "steps", "scale")}
        assert range_values(spec, Parameter(name="x", type=case["type"], default="1")) == case["values"], case
    assert [gpu_hours(*case[:4]) for case in table["gpu_hours"]] == [case[4] for case in table["gpu_hours"]]


def test_a_random_sample_is_the_same_for_the_same_seed_and_within_the_grid():
    grid = {"learning_rate": {"range": {"from": 0.001, "to": 0.1, "steps": 50}}, "batch_size": {"values": [16, 32]}}
    sweep = a_sweep(grid, sample=10)
    assert sweep.tasks == 10
    points = sweep.points()
    assert points == a_sweep(grid, sample=10).points()
    assert len({json.dumps(p, sort_keys=True) for p in points}) == 10
    assert Sweep.from_settings(sweep.settings()).points() == points  # what the record keeps gives them again


def test_a_sample_of_a_grid_beyond_a_machine_word_is_drawn_too():
    grid = {name: {"values": list(range(100))} for name in ("learning_rate", "batch_size", "epochs")}
    axes = tuple((f"p{i}", tuple(range(100))) for i in range(10))  # 10**20 points: past what range() samples
    settings = {"grid": {name: {"values": list(values)} for name, values in axes}, "sample": 5, "seed": 1}
    assert len({json.dumps(p) for p in sweepgrid.points(settings)}) == 5
    assert a_sweep(grid, sample=4).tasks == 4


def test_a_value_listed_twice_runs_once():
    assert a_sweep({"batch_size": {"values": [32, 64, 32]}}).points() == [{"batch_size": 32}, {"batch_size": 64}]


def test_a_sample_of_a_huge_grid_never_builds_the_grid():
    grid = {name: {"range": {"from": 1, "to": 1_000, "steps": 1_000}} for name in ("batch_size", "epochs")}
    sweep = a_sweep({**grid, "learning_rate": {"range": {"from": 0.1, "to": 1, "steps": 1_000}}}, sample=5)
    assert sweep.size == 1_000**3
    assert len(sweep.points()) == 5


def test_a_grid_of_too_many_values_is_refused_before_any_is_made(monkeypatch):
    # 200 ranges of 10,000 steps in a 15 KB request held the hub's loop 10 s while each value was made and checked
    made = []
    monkeypatch.setattr("spawner.hub.runs.grid.range_values", lambda *a: made.append(a) or [])
    grid = {name: {"range": {"from": 1, "to": 2, "steps": 2_000}} for name in ("batch_size", "epochs", "learning_rate")}
    with pytest.raises(SweepError) as refused:
        a_sweep(grid, sample=5)
    assert "at most 4,000 values in all the grid's lists and ranges" in str(refused.value)
    assert made == []


@pytest.mark.parametrize(
    "grid, words",
    [
        ({"learning_rate": {"range": {"from": -1e308, "to": 1e308, "steps": 3}}}, "too wide to divide into 3 steps"),
        ({"learning_rate": {"values": [0.1, float("nan")]}}, "must be finite numbers"),
        ({"learning_rate": {"values": [0.1, float("inf")]}}, "must be finite numbers"),
    ],
)
def test_numbers_no_browser_reads_are_refused(grid, words):
    with pytest.raises(SweepError) as refused:
        a_sweep(grid)
    assert words in str(refused.value)


@pytest.mark.parametrize(
    "grid, more, words",
    [
        ({}, {}, "the grid is empty"),
        ({"learning_rate": {"values": []}}, {}, "a list of at least one value"),
        ({"learning_rate": {"value": 0.1}}, {}, "this grid has one point"),
        ({"batch_size": {"values": [32, "big"]}}, {}, "batch_size must be a whole number"),
        ({"nope": {"values": [1, 2]}}, {}, 'has no parameter "nope"; its parameters are learning_rate'),
        ({"name": {"range": {"from": 1, "to": 2}}}, {}, "a range is for numbers"),
        ({"learning_rate": {"range": {"from": 0, "to": 1, "scale": "log"}}}, {}, "needs numbers above 0"),
        ({"learning_rate": {"range": {"from": 0, "to": 1, "steps": 1}}}, {}, "steps of learning_rate's range"),
        ({"batch_size": {"range": {"from": 1, "to": 2000, "steps": 2000}}}, {}, "2,000 runs is more than the 1,000"),
        ({"batch_size": {"values": [1, 2]}}, {"at_once": 9}, "at_once must be a whole number from 1 to 8"),
        ({"batch_size": {"values": [1, 2]}}, {"best": "most"}, 'best is "max" or "min"'),
        ({"batch_size": {"values": [1, 2]}}, {"objective": "a b"}, "objective names one result"),
        ({"batch_size": {"sweep": [1, 2]}}, {}, 'one of {"value": x}'),
    ],
)
def test_bad_grids_are_refused_with_words(grid, more, words):
    with pytest.raises(SweepError) as refused:
        a_sweep(grid, **more)
    assert words in str(refused.value)


def test_a_notebook_without_a_parameters_cell_is_told_so():
    with pytest.raises(SweepError) as refused:
        parse_sweep({"grid": {"lr": {"values": [1, 2]}}}, [], "work/plain.ipynb", LIMITS)
    assert 'work/plain.ipynb has no parameters cell (a code cell tagged "parameters")' in str(refused.value)


def test_gpu_hours_are_every_task_to_its_time_limit():
    assert gpu_hours(6, 2, 1, 1.5) == 18.0


@pytest.fixture
def settings(tmp_path, mock_slurm):
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump(config_data(mock_slurm)))
    return load_config(path)


def test_a_sweep_is_one_job_array_with_its_limit_at_once(settings):
    request = parse_run({"path": "work/train.ipynb", "gpus": 1, "sweep": {"grid": {}}}, settings)
    sweep = a_sweep({"batch_size": {"values": [32, 64, 128]}}, at_once=2)
    argv = sbatch_argv(settings.slurm, run_job(settings, request, Account("alice", "/home/alice"), sweep))
    assert "--array=0-2%2" in argv
    assert "--output=/home/alice/.dsportal-job-%A_%a.log" in argv
    spec = run_spec(settings, request, "/home/alice", {}, sweep)
    assert spec["sweep"]["grid"] == {"batch_size": {"values": [32, 64, 128]}}  # the grid, never every point
    assert [sweepgrid.task_point(spec["sweep"], t) for t in range(3)] == sweep.points()


def test_a_sweep_is_refused_for_scripts_and_beside_parameters(settings):
    for options, words in (
        ({"path": "a.py", "sweep": {}}, "sweeps are for notebooks"),
        ({"path": "a.ipynb", "sweep": {}, "parameters": {"lr": 1}}, 'not in "parameters"'),
        ({"path": "a.ipynb", "sweep": []}, "sweep must be a JSON object"),
    ):
        with pytest.raises(ValueError) as refused:
            parse_run(options, settings)
        assert words in str(refused.value)


def test_listed_array_ids_read_as_their_tasks():
    assert array_tasks("178_3") == ("178", [3])
    assert array_tasks("178_[1-5%2]") == ("178", [1, 2, 3, 4, 5])
    assert array_tasks("178_[0,4-5]") == ("178", [0, 4, 5])
    assert array_tasks("178") is None
    assert array_tasks("82+1") is None
    assert array_tasks("178_[5-1]") is None
    assert array_tasks("178_[0-8:4,9]") == ("178", [0, 4, 8, 9])  # Slurm's steps
    line = "178_[1-5%2]|alice|PENDING|cpu|1||0:00|2:00|2:00|2026-11-27T05:31:38|N/A|JobArrayTaskLimit"
    assert [j.job_id for j in parse_all_jobs(line)] == ["178_[1-5%2]"]


def listed(job_id: str, state: str, elapsed: str = "0:00") -> ListedJob:
    node = "node001" if state == "RUNNING" else ""
    return ListedJob(job_id, "alice", state, "cpu", 1, node, elapsed, "", "10:00", "", "", "")


def accounted(job_id: str, state: str) -> AccountedJob:
    code = "0:0" if state == "COMPLETED" else "1:0"
    return AccountedJob(job_id, "alice", "cpu", state, code, "", "x", "", "0:40", 1, "node001", "10:00")


def test_task_states_squeue_over_accounting_and_unlisted_tasks_wait():
    states = task_states(
        "178",
        6,
        [listed("178_[3-4%2]", "PENDING"), listed("178_1", "RUNNING", "0:12"), listed("99", "RUNNING")],
        [accounted("178_0", "COMPLETED"), accounted("178_1", "PENDING"), accounted("178_2", "FAILED")],
    )
    assert [s.state for s in states] == ["COMPLETED", "RUNNING", "FAILED", "PENDING", "PENDING", ""]
    assert states[1].elapsed == "0:12"
    tally = counts(states)
    assert tally == {
        "waiting": 3, "running": 1, "completed": 1, "failed": 1, "timeout": 0, "cancelled": 0, "other": 0,
    }  # fmt: skip
    assert counts_words(tally) == "6 tasks: 1 running, 3 waiting, 1 completed, 1 failed."


def test_tasks_no_listing_has_once_squeue_lists_none_were_cancelled_waiting():
    done = [accounted("178_0", "CANCELLED")]
    assert [s.state for s in task_states("178", 3, [], done)] == ["CANCELLED", "", ""]  # just submitted
    assert [s.state for s in task_states("178", 3, [], done, settled=True)] == ["CANCELLED"] * 3
    queued = [listed("178_1", "RUNNING")]
    assert [s.state for s in task_states("178", 3, queued, done, settled=True)] == ["CANCELLED", "RUNNING", ""]
    ended = [listed("178_0", "CANCELLED")]  # squeue keeps an ended task a while (MinJobAge)
    assert [s.state for s in task_states("178", 3, ended, [], settled=True)] == ["CANCELLED"] * 3


def test_the_panel_shows_a_sweep_as_one_row():
    run = {
        "job_id": "178",
        "settings": {"path": "t.ipynb", "sweep": a_sweep({"batch_size": {"values": [1, 2, 3]}}).settings()},
        "sweep": {"tasks": 3, "at_once": 2, "varied": ["batch_size"]},
    }
    rows = [
        {"job_id": "178", "active": True, "job": "sweep"},
        {"job_id": "178_0", "active": True},
        {"job_id": "178_[1-2%2]", "active": True},
        {"job_id": "99", "active": False},
    ]
    folded = fold_sweeps(rows, [run], [listed("178_0", "RUNNING"), listed("178_[1-2%2]", "PENDING")], [], 10)
    assert [r["job_id"] for r in folded] == ["178", "99"]
    assert folded[0]["sweep"]["counts"]["running"] == 1
    assert folded[0]["words"] == "3 tasks: 1 running, 2 waiting."
    assert folded[0]["can_cancel"] is True


def test_results_files_and_the_best_task():
    assert read_results('{"task": 1, "results": {"accuracy": 0.9, "x": [1]}}\n') == {
        "results": {"accuracy": 0.9},
        "error": "",
        "failed": "",
    }
    assert read_results("not json")["error"] == "its results file does not read as JSON"
    assert best_task([(0, 0.9), (1, 0.95), (2, None), (3, 0.95)], "max") == 1
    assert best_task([(0, 0.9), (1, 0.95)], "min") == 0
    assert best_task([(0, None)], "max") is None


def test_how_a_sweep_ended_with_its_best_result():
    row = {"task": 3, "parameters": {"learning_rate": 0.01, "batch_size": 64}, "results": {"accuracy": 0.95}}
    tally = dict.fromkeys(("waiting", "running", "timeout", "cancelled", "other"), 0) | {"completed": 5, "failed": 1}
    words = ended_words(tally, "accuracy", "max", row, ["learning_rate", "batch_size"])
    assert words == "6 tasks: 5 completed, 1 failed; best accuracy 0.95 (task 3: learning_rate=0.01, batch_size=64)."
    summary = {"best_task": 0, "tasks": [row], "objective": "accuracy", "best": "max", "varied": ["batch_size"]}
    assert ended(summary, tally)[0] == "FAILED"
    subject, body = sweep_ended_mail("178", "work/t.ipynb", tally, words, "jobs/t-178", "https://hub")
    assert subject == "Sweep 178 (work/t.ipynb): 5 of 6 completed; best accuracy 0.95"
    assert "~/jobs/t-178/" in body


def test_head_of_several_files_is_split_by_its_headers():
    text = '==> /h/a.json <==\n{"task": 0}\n\n==> /h/b.json <==\n==> /h/x <==\n'
    assert split_heads(text, ["/h/a.json", "/h/b.json"]) == {"/h/a.json": '{"task": 0}', "/h/b.json": "==> /h/x <=="}


def test_a_sweep_task_runs_its_own_point_into_its_own_files():
    spec = RunSpec("notebook", "/h/work/t.ipynb", "/h/jobs", sweep={"grid": {"lr": {"values": [1, 2]}}})
    environ = {"SLURM_JOB_ID": "190", "SLURM_ARRAY_JOB_ID": "178", "SLURM_ARRAY_TASK_ID": "1"}
    assert notebook_run(spec, environ) == NotebookRun(
        {"lr": 2}, "/h/jobs/t-178/task-1.ipynb", 1, "/h/jobs/t-178/task-1.json"
    )
    single = RunSpec("notebook", "/h/work/t.ipynb", "/h/jobs", parameters={"lr": 3})
    assert notebook_run(single, {"SLURM_JOB_ID": "5"}) == NotebookRun({"lr": 3}, "/h/jobs/t-5.ipynb")


class Tensor:
    def item(self):
        return 0.5


def recorded(tmp_path, value) -> dict:
    """What the runner's cell writes for `value` (run as the kernel runs it: in the notebook's namespace)."""
    path = tmp_path / "task-2.json"
    namespace: dict = {} if value is None else {"results": value}
    exec(results.python_cell(2, str(path)), namespace)
    assert "_dsportal_record" not in namespace  # nothing left in the user's namespace
    return json.loads(path.read_text())


def test_what_a_task_records_numbers_texts_and_why_not(tmp_path):
    assert recorded(tmp_path, {"acc": Tensor(), "loss": float("nan"), "ok": True}) == {
        "task": 2,
        "results": {"acc": 0.5, "loss": None, "ok": True},
    }
    assert "record numbers, texts or booleans" in recorded(tmp_path, {"w": [1, 2]})["error"]
    assert "assigns no dict named results" in recorded(tmp_path, None)["error"]
    assert "assigns results a int" in recorded(tmp_path, 3)["error"]
    assert "larger than 4 KiB" in recorded(tmp_path, {f"k{i}": "x" * 100 for i in range(50)})["error"]


def test_the_recording_cell_imports_nothing_of_the_portal():
    # a container or module kernel has no portal package; a folder named `spawner` beside the notebook would win
    assert "spawner" not in results.python_cell(0, "/h/t.json")


def test_a_results_file_nested_too_deeply_says_so():
    assert read_results("[" * 5000)["error"] == "its results file does not read as JSON"


def test_the_results_cell_follows_the_cell_tagged_results(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}}
    )
    notebook.cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("results = {'x': x}", metadata={"tags": ["results"]}),
        nbformat.v4.new_code_cell("print(x)"),
    ]
    path = str(tmp_path / "task-0.json")
    assert results.add_results_cell(notebook, 0, path)
    assert notebook.cells[2].metadata["tags"] == [results.INJECTED_TAG]
    namespace: dict = {"results": {"x": 1}}
    exec(notebook.cells[2].source, namespace)  # what the kernel runs
    assert json.loads((tmp_path / "task-0.json").read_text()) == {"task": 0, "results": {"x": 1}}
    results.add_failure(path, 0, "cell [3] raised ValueError: no")
    assert json.loads((tmp_path / "task-0.json").read_text())["failed"] == "cell [3] raised ValueError: no"


def test_running_one_task_again_is_a_single_run_of_its_point():
    sweep = a_sweep({"learning_rate": {"values": [0.001, 0.01]}, "batch_size": {"values": [32, 64]}}, at_once=2)
    run = {
        "job_id": "178",
        "settings": {"path": "t.ipynb", "gpus": 1, "sweep": sweep.settings()},
        "sweep": {"tasks": 4},
    }
    assert task_options(run, 2) == {"path": "t.ipynb", "gpus": 1, "parameters": sweep.points()[2]}
    assert sweep.points()[2] == {"learning_rate": 0.01, "batch_size": 32}

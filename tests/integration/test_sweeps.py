"""Sweeps as real Slurm job arrays on the dev cluster (real Slurm, slurmdbd, exim), through the hub's REST API.

A 2×3 grid of the PyTorch MNIST template run to the end, with the table's best
row checked against the output notebooks; a failing task among good ones; cancel
the rest; refusals with words; the R template with a changed parameter.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.http import wait_until
from tests.support.jobs import JobsClient, notebook_text
from tests.support.mail import wait_for_mail
from tests.support.notebooks import NOTEBOOKS

# the side lane's people, beside the other tests (tests/support/lanes.py)
pytestmark = pytest.mark.side

SMALL = "lr = 0.1  # learning rate\nseed = 0\n"
RESULTS = "results = {'score': lr * 10 + seed, 'seed_was': seed}"


@pytest.fixture(scope="module")
def erin() -> JobsClient:
    return JobsClient.for_user("erin")


def results_notebook(cells: list[str]) -> str:
    """A notebook whose last cell (tagged "results") records `score`."""
    notebook = json.loads(notebook_text(cells + [RESULTS], SMALL))
    notebook["cells"][-1]["metadata"]["tags"] = ["results"]
    return json.dumps(notebook)


def table(client: JobsClient, job_id: str) -> dict:
    status, answer = client.request("GET", f"runs/{job_id}/tasks")
    assert status == 200, answer
    return answer


def wait_sweep_ended(client: JobsClient, job_id: str, timeout: float) -> dict:
    return client.wait_row(job_id, lambda r: not r["active"] and r["why"] and "reading" not in r["why"], timeout,
                           f"sweep {job_id} ended")  # fmt: skip


def test_the_mnist_template_over_a_2x3_grid_ranks_its_tasks(erin):
    template = (NOTEBOOKS / "pytorch-mnist.ipynb").read_text()  # its results cell: test_accuracy, train_seconds
    erin.write("sweeps/mnist.ipynb", template)
    grid = {
        "learning_rate": {"values": [0.0005, 0.005]},
        "batch_size": {"values": [16, 32, 64]},
        "epochs": {"value": 1},
        "log_every": {"value": 1000},
        "data_path": {"value": "/nonexistent/mnist.npz"},  # scikit-learn's digits: seconds, not minutes
    }
    run = erin.submit(
        {"path": "sweeps/mnist.ipynb", "partition": "cpu", "hours": 0.5, "sweep": {"grid": grid, "at_once": 3}}
    )
    assert run["sweep"]["tasks"] == 6 and run["sweep"]["varied"] == ["learning_rate", "batch_size"]
    array = run["job_id"]
    squeue = subprocess.run(["squeue", "-h", "-r", "-j", array, "-o", "%i"], capture_output=True, text=True, timeout=30)
    assert len(squeue.stdout.split()) in range(1, 7)  # one job array, never six jobs
    row = erin.rows()[array]
    assert row["sweep"]["tasks"] == 6 and row["words"].startswith("6 tasks: ")
    assert not any(j.startswith(f"{array}_") for j in erin.rows())  # one row for the whole sweep
    row = wait_sweep_ended(erin, array, 600)
    answer = table(erin, array)
    assert [t["state"] for t in answer["tasks"]] == ["COMPLETED"] * 6, answer
    accuracies = [t["results"]["test_accuracy"] for t in answer["tasks"]]
    assert answer["objective"] == "test_accuracy" and answer["results"] == ["test_accuracy", "train_seconds"]
    assert answer["best_task"] == accuracies.index(max(accuracies))
    best = answer["tasks"][answer["best_task"]]
    output = json.loads((erin.home / best["output"]).read_text())
    injected = next(c for c in output["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    assert f"batch_size = {best['parameters']['batch_size']}" in "".join(injected["source"])
    assert f"best test_accuracy {max(accuracies):.6g}" in row["why"]
    assert row["why"].startswith("6 tasks: 6 completed; best")


def test_a_failing_task_keeps_its_output_and_the_others_go_on(erin):
    erin.write(
        "sweeps/some-fail.ipynb",
        results_notebook(["if seed == 1:\n    raise ValueError('seed 1 is cursed')", "print('lived', seed)"]),
    )
    run = erin.submit(
        {"path": "sweeps/some-fail.ipynb", "partition": "cpu", "hours": 0.2,
         "sweep": {"grid": {"seed": {"values": [0, 1, 2]}, "lr": {"value": 0.5}}}}
    )  # fmt: skip
    row = wait_sweep_ended(erin, run["job_id"], 300)
    answer = table(erin, run["job_id"])
    states = [t["state"] for t in answer["tasks"]]
    assert states == ["COMPLETED", "FAILED", "COMPLETED"], answer
    failed = answer["tasks"][1]
    assert "raised ValueError: seed 1 is cursed" in failed["why"]
    assert failed["results"] == {}
    kept = json.loads((erin.home / failed["output"]).read_text())
    assert "ValueError" in json.dumps(kept["cells"])  # the partial output is kept
    assert [t["results"].get("score") for t in answer["tasks"]] == [5.0, None, 7.0]
    assert answer["best_task"] == 2
    assert row["why"] == "3 tasks: 2 completed, 1 failed; best score 7 (task 2: seed=2)."


def test_a_results_cell_that_is_not_json_says_why(erin):
    notebook = json.loads(results_notebook([]))
    notebook["cells"][-1]["source"] = "results = {'model': object(), 'lr': lr}"
    erin.write("sweeps/bad-results.ipynb", json.dumps(notebook))
    run = erin.submit(
        {"path": "sweeps/bad-results.ipynb", "partition": "cpu", "hours": 0.2,
         "sweep": {"grid": {"seed": {"values": [0, 1]}}}}
    )  # fmt: skip
    wait_sweep_ended(erin, run["job_id"], 300)
    answer = table(erin, run["job_id"])
    assert all(t["state"] == "COMPLETED" for t in answer["tasks"])
    assert "results['model'] is object; record numbers, texts or booleans" in answer["tasks"][0]["results_error"]


def test_cancel_the_rest_ends_every_task_not_ended(erin):
    erin.write("sweeps/slow.ipynb", results_notebook(["import time\ntime.sleep(600)"]))
    run = erin.submit(
        {"path": "sweeps/slow.ipynb", "partition": "cpu", "hours": 0.2,
         "sweep": {"grid": {"seed": {"range": {"from": 0, "to": 9, "steps": 10}}}, "at_once": 1}}
    )  # fmt: skip
    array = run["job_id"]
    # the row, not the table: polled this often, the table's file reads would pass the hub's 60 a minute
    erin.wait_row(array, lambda r: r["sweep"]["counts"]["running"] == 1, 120, "the first task running")
    status, answer = erin.request("POST", f"runs/{array}_5/cancel")  # one waiting task alone
    assert status == 200, answer
    status, answer = erin.request("POST", f"runs/{array}/cancel")
    assert status == 200, answer
    row = wait_sweep_ended(erin, array, 120)
    assert row["sweep"]["counts"]["cancelled"] == 10
    assert row["why"].startswith("10 tasks: 10 cancelled")
    status, answer = erin.request("POST", f"runs/{array}/cancel")
    assert status == 409 and "already ended" in answer["message"]


@pytest.mark.parametrize(
    "sweep, words",
    [
        ({"grid": {}}, "the grid is empty"),
        ({"grid": {"lr": {"values": [0.1, "fast"]}}}, "lr must be a number"),
        ({"grid": {"lr": {"range": {"from": 0.1, "to": 1, "steps": 2000}}}}, "2,000 runs is more than the"),
        ({"grid": {"nope": {"values": [1, 2]}}}, 'has no parameter "nope"'),
        ({"grid": {"lr": {"values": [0.1, 0.2]}}, "at_once": 999}, "at_once must be a whole number from 1 to"),
    ],
)
def test_bad_sweeps_are_refused_with_words_and_submit_nothing(erin, sweep, words):
    erin.write("sweeps/small.ipynb", results_notebook([]))
    before = set(erin.rows())
    status, answer = erin.request("POST", "runs", {"path": "sweeps/small.ipynb", "partition": "cpu", "sweep": sweep})
    assert status == 400 and words in answer["message"], answer
    assert set(erin.rows()) == before


def test_a_sweep_above_the_gpu_hours_limit_is_refused(erin):
    erin.write("sweeps/small.ipynb", results_notebook([]))
    status, answer = erin.request(
        "POST",
        "jobs",
        {
            "path": "sweeps/small.ipynb",
            "gpus": 4,
            "hours": 8,
            "sweep": {"grid": {"seed": {"range": {"from": 0, "to": 9, "steps": 10}}}},
        },
    )
    assert status == 400 and "GPU-hours, more than the 200" in answer["message"], answer


def test_a_notebook_without_parameters_cell_is_told_so(erin):
    erin.write("sweeps/plain.ipynb", notebook_text(["print(1)"]))
    status, answer = erin.request(
        "POST", "jobs", {"path": "sweeps/plain.ipynb", "partition": "cpu", "sweep": {"grid": {"x": {"values": [1, 2]}}}}
    )
    assert status == 400 and 'has no parameters cell (a code cell tagged "parameters")' in answer["message"]


def test_one_mail_for_a_whole_sweep_with_its_best(erin):
    status, _ = erin.request("POST", "notify", {"mail": True})
    assert status == 200
    try:
        erin.write("sweeps/mailed.ipynb", results_notebook([]))
        run = erin.submit(
            {"path": "sweeps/mailed.ipynb", "partition": "cpu", "hours": 0.2,
             "sweep": {"grid": {"seed": {"values": [0, 1, 2]}}}}
        )  # fmt: skip
        mail = wait_for_mail("erin", f"Sweep {run['job_id']} (sweeps/mailed.ipynb): 3 of 3 completed", timeout=300)
        assert "best score 3" in mail["Subject"]
        body = mail.get_payload(decode=True).decode()
        assert f"~/jobs/mailed-{run['job_id']}/" in body
    finally:
        erin.request("POST", "notify", {"mail": False})


def test_the_r_template_runs_with_a_changed_parameter(erin):
    erin.write("sweeps/r.ipynb", (NOTEBOOKS / "r-data-analysis.ipynb").read_text())
    status, form = erin.request("GET", "runs/form?path=sweeps/r.ipynb")
    assert status == 200, form
    assert [(p["name"], p["type"]) for p in form["parameters"]] == [("formula_text", "str")]
    run = erin.submit(
        {"path": "sweeps/r.ipynb", "partition": "cpu", "hours": 0.2, "parameters": {"formula_text": "mpg ~ wt"}}
    )
    row = erin.wait_ended(run["job_id"], 300)
    assert row["why"] == "Completed.", row
    output = json.loads((erin.home / run["output"]).read_text())
    printed = json.dumps(output["cells"])
    assert 'formula_text = \\"mpg ~ wt\\"' in printed  # papermill's R translator
    assert "R-squared: 0.7528" in printed  # mpg ~ wt alone (with hp it is 0.8268)


@pytest.mark.slurm
def test_a_quote_heavy_value_reaches_every_task(erin):
    # the job script once passed the sweep as one argument: 20,000 quotes shell-quoted passed Linux's 128 KiB per
    # argument, and every task ended "Argument list too long" (exit 126)
    notebook = json.loads(results_notebook([]))
    notebook["cells"][0]["source"] = SMALL + "name = 'x'\n"
    notebook["cells"][-1]["source"] = "results = {'length': len(name), 'score': seed}"
    erin.write("sweeps/quotes.ipynb", json.dumps(notebook))
    run = erin.submit(
        {"path": "sweeps/quotes.ipynb", "partition": "cpu", "hours": 0.2,
         "sweep": {"grid": {"seed": {"values": [0, 1]}, "name": {"value": "'" * 20_000}}}}
    )  # fmt: skip
    wait_sweep_ended(erin, run["job_id"], 300)
    answer = table(erin, run["job_id"])
    assert [t["results"] for t in answer["tasks"]] == [{"length": 20_000, "score": 0}, {"length": 20_000, "score": 1}]


def test_a_fifo_planted_as_results_holds_no_one_elses_notice(erin):
    # frank's own sweeps plant FIFOs where their results go: each read of one hangs `head` until its timeout.  The
    # tracker once read them in its round, one after another, and every user's notices waited behind them.
    frank = JobsClient.for_user("frank")
    plant = (
        "import os\nos.mkfifo(os.path.expanduser(f\"~/jobs/fifo-{os.environ['SLURM_ARRAY_JOB_ID']}/task-{seed}.json\"))"
    )
    notebook = json.loads(notebook_text([plant], SMALL))
    frank.write("sweeps/fifo.ipynb", json.dumps(notebook))
    planted = [
        frank.submit({"path": "sweeps/fifo.ipynb", "partition": "cpu", "hours": 0.2,
                    "sweep": {"grid": {"seed": {"values": [0, 1]}}}})["job_id"]
        for _ in range(3)
    ]  # fmt: skip
    for job_id in planted:
        wait_until(
            lambda j=job_id: (frank.home / f"jobs/fifo-{j}/task-1.json").is_fifo(), 120, f"frank's FIFO of {job_id}"
        )
    erin.write("sweeps/beside.ipynb", results_notebook([]))
    run = erin.submit(
        {
            "path": "sweeps/beside.ipynb",
            "partition": "cpu",
            "hours": 0.2,
            "sweep": {"grid": {"seed": {"values": [0, 1]}}},
        }
    )
    erin.wait_row(run["job_id"], lambda r: r["sweep"]["counts"]["completed"] == 2, 120, "erin's tasks done")
    # three planted sweeps held each round 60 s (20 s per hung read); now the round goes on and says erin's end
    row = erin.wait_row(run["job_id"], lambda r: "best score" in r["why"], 40, "erin's sweep said ended")
    assert row["why"].startswith("2 tasks: 2 completed")
    # frank's own ends are said without their results, after the tracker's tries: one read of his at a time (so
    # his FIFOs never take the other users' reads), the newest sweep first
    ended = frank.wait_row(planted[-1], lambda r: not r["active"] and bool(r["why"]), 240, "frank's newest end")
    assert ended["why"] == "2 tasks: 2 completed; its results could not be read."


def test_an_r_notebook_sweeps_and_records_its_results(erin):
    template = json.loads((NOTEBOOKS / "r-data-analysis.ipynb").read_text())
    template["cells"].append(
        {
            "cell_type": "code",
            "id": "results",
            "metadata": {"tags": ["results"]},
            "execution_count": None,
            "outputs": [],
            "source": "results <- list(r_squared = summary(fit)$r.squared, formula = formula_text)",
        }
    )
    erin.write("sweeps/r-sweep.ipynb", json.dumps(template))
    formulas = ["mpg ~ wt", "mpg ~ wt + hp"]
    run = erin.submit(
        {"path": "sweeps/r-sweep.ipynb", "partition": "cpu", "hours": 0.2,
         "sweep": {"grid": {"formula_text": {"values": formulas}}}}
    )  # fmt: skip
    row = wait_sweep_ended(erin, run["job_id"], 300)
    answer = table(erin, run["job_id"])
    assert [t["state"] for t in answer["tasks"]] == ["COMPLETED", "COMPLETED"], answer
    assert [t["results"]["formula"] for t in answer["tasks"]] == formulas  # the R cell wrote each task's own
    assert [round(t["results"]["r_squared"], 4) for t in answer["tasks"]] == [0.7528, 0.8268]
    assert answer["best_task"] == 1
    assert row["why"].startswith("2 tasks: 2 completed; best r_squared 0.8267")
    assert row["why"].endswith("(task 1: formula_text=mpg ~ wt + hp).")

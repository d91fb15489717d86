"""Runs (notebooks and scripts as Slurm jobs): the pure parts, by equality.

What a user may ask (runs/request.py), a notebook's parameters (spawner/notebookparams/),
the sbatch call and the job script (runs/jobscript.py), the panel's rows and the
words for each end (runs/board.py), when the tracker calls a run ended
(runs/tracker.py), the runner's process layout (spawner/job/runs/runner.py) and the
mail (spawner/hub/base/notices.py).
"""

from __future__ import annotations

import json
import shlex
from types import SimpleNamespace

import pytest
import yaml

from portal.config import load_config
from spawner.contract import run_output
from spawner.hub.base.notices import message, run_ended_mail, waited_words
from spawner.hub.request.jobrequest import sbatch_argv
from spawner.hub.request.jobspec import Account
from spawner.hub.request.options import OptionsError
from spawner.hub.runs.board import Outcome, ended_why, job_rows, read_outcome
from spawner.hub.runs.jobscript import run_job, run_script
from spawner.hub.runs.request import RunRequest, parse_run, run_name
from spawner.hub.runs.tracker import GONE_AFTER, final_state
from spawner.hub.slurm.client import last_lines, tail_argv
from spawner.job.runs.runner import RunSpec, one_process_argv
from spawner.notebookparams import NotRunnable, Parameter, check_values, notebook_parameters
from spawner.slurmvocab import AccountedJob, ListedJob, parse_accounting, parse_all_jobs
from tests.support.mockslurm import config_data

ALICE = Account(name="alice", home="/home/alice")


@pytest.fixture
def settings(tmp_path, mock_slurm):
    data = config_data(mock_slurm)
    data["slurm"]["partitions"][0]["max_nodes"] = 2
    data["notify"] = {"smtp_host": "127.0.0.1", "sender": "portal@example.org"}
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


def notebook(*cells: tuple[list[str], str]) -> str:
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {"cell_type": "code", "metadata": {"tags": tags}, "source": source, "outputs": []}
                for tags, source in cells
            ],
        }
    )


PARAMS = notebook(
    (
        ["parameters"],
        "lr = 0.01  # learning rate\nepochs: int = 3\nname = 'x'\nflag = True\nlayers = [1, 2]\nx = 2 * 3\n",
    ),
    ([], "print(lr)"),
)


# --- the request -----------------------------------------------------------------------
def test_a_full_request_reads_as_given(settings):
    asked = {"path": "work/../train.ipynb", "partition": "sxm2", "nodes": 2, "gpus": "1", "hours": "1.5"}
    assert parse_run(asked, settings) == RunRequest("train.ipynb", "notebook", "sxm2", 2, 1, 1.5, {})


def test_defaults_are_the_admins(settings):
    assert parse_run({"path": "a.py"}, settings) == RunRequest("a.py", "python", "sxm2", 1, 0, 1.0, {})


@pytest.mark.parametrize(
    "asked, words",
    [
        ({"path": "../x.ipynb"}, "outside your home"),
        ({"path": "/etc/passwd.py"}, "outside your home"),
        ({"path": "notes.txt"}, "not a notebook (.ipynb), Python script (.py) or shell script (.sh)"),
        ({"path": "a\nb.py"}, "without line breaks"),
        ({}, "name the notebook or script"),
        (
            {"path": "a.py", "nodes": 3},
            "nodes: 3 is out of range; choose a whole number from 1 to 2 for partition sxm2",
        ),
        ({"path": "a.py", "partition": "pcie", "nodes": 2}, "from 1 to 1 for partition pcie"),
        ({"path": "a.py", "gpus": 5}, "gpus: 5 is out of range"),
        ({"path": "a.py", "partition": "nope"}, "not offered here"),
        ({"path": "a.py", "hours": 25}, "hours: 25 is out of range"),
        ({"path": "a.py", "parameters": {"x": 1}}, "parameters are for notebooks"),
        ({"path": "a.ipynb", "parameters": [1]}, "parameters must be a JSON object"),
        ({"path": "a.py", "script": "rm -rf ~"}, 'Unknown option(s) "script"'),
    ],
)
def test_bad_requests_are_refused_with_words(settings, asked, words):
    with pytest.raises(OptionsError) as refused:
        parse_run(asked, settings)
    assert words in str(refused.value)


def test_a_run_never_takes_the_sessions_job_name():
    assert run_name("work/my notebook.ipynb", "dsportal") == "my_notebook.ipynb"
    assert run_name("dsportal", "dsportal") == "dsportal-job"


# --- the notebook's parameters ----------------------------------------------------------
def test_parameters_are_typed_from_their_defaults_and_annotations():
    assert notebook_parameters(PARAMS, "a.ipynb") == [
        Parameter("lr", "float", "0.01", "learning rate"),
        Parameter("epochs", "int", "3", ""),
        Parameter("name", "str", "'x'", ""),
        Parameter("flag", "bool", "True", ""),
        Parameter("layers", "list", "[1, 2]", ""),
        Parameter("x", "expression", "2 * 3", ""),
    ]
    assert notebook_parameters(notebook(([], "a = 1")), "a.ipynb") == []


def test_values_are_checked_against_the_declared_types():
    declared = notebook_parameters(PARAMS, "a.ipynb")
    assert check_values({"lr": 1, "flag": False, "x": {"any": "json"}}, declared, "a.ipynb") == {
        "lr": 1.0,
        "flag": False,
        "x": {"any": "json"},
    }
    for values, words in [
        ({"lr": "fast"}, 'parameters: lr must be a number (its default is 0.01), not "fast".'),
        ({"epochs": 1.5}, "parameters: epochs must be a whole number (its default is 3), not 1.5."),
        ({"flag": 1}, "parameters: flag must be true or false (its default is True), not 1."),
        ({"zz": 1}, "parameters: a.ipynb has no parameter 'zz'; its parameters are lr, epochs, name, flag, layers, x."),
    ]:
        with pytest.raises(ValueError) as refused:
            check_values(values, declared, "a.ipynb")
        assert str(refused.value) == words
    with pytest.raises(ValueError, match="has no parameters cell"):
        check_values({"a": 1}, [], "b.ipynb")


@pytest.mark.parametrize(
    "text, words",
    [
        ("{not json", "a.ipynb is not a valid notebook: it is not JSON"),
        ('{"cells": 3}', "it has no list of cells"),
        ('{"nbformat": 3, "cells": []}', "an old notebook"),
        (notebook((["parameters"], "lr = (")), "its parameters cell is not valid Python (line 1"),
    ],
)
def test_a_notebook_that_cannot_run_says_why(text, words):
    with pytest.raises(NotRunnable) as refused:
        notebook_parameters(text, "a.ipynb")
    assert words in str(refused.value)


# --- sbatch and the job script -----------------------------------------------------------
def test_sbatch_for_two_nodes_of_one_gpu(settings):
    request = RunRequest("work/train.ipynb", "notebook", "sxm2", 2, 1, 1.5, {})
    slurm = settings.slurm
    assert sbatch_argv(settings.slurm, run_job(settings, request, ALICE)) == [
        slurm.sudo,
        "-n",
        "--preserve-env=USER,LOGNAME,HOME,SHELL,LANG",
        "-u",
        "alice",
        "--",
        slurm.sbatch,
        "--parsable",
        "--no-requeue",
        "--job-name=train.ipynb",
        "--nodes=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=8",
        "--mem=48G",
        "--gres=gpu:1",
        "--time=01:30:00",
        "--partition=sxm2",
        "--account=ds",
        "--output=/home/alice/.dsportal-job-%j.log",
        "--chdir=/home/alice/work",
        "--export=ALL",
    ]


def test_the_job_script_quotes_what_the_user_chose(settings):
    request = RunRequest("work/it's $(rm -rf ~).ipynb", "notebook", "sxm2", 1, 0, 1, {})
    script = run_script(settings, request, ALICE, {"name": "a'; rm -rf ~; '"})
    *_, command, spec, end = script.strip().splitlines()
    words = shlex.split(command)
    assert words == ["exec", "/opt/dsportal/venv/bin/dsportal-run-job", "-", "<<DSPORTAL_SPEC"]
    assert end == "DSPORTAL_SPEC" and spec.isascii()  # on stdin, never an argument (Linux's 128 KiB per argument)
    assert json.loads(spec) == {
        "kind": "notebook",
        "path": "/home/alice/work/it's $(rm -rf ~).ipynb",
        "output_dir": "/home/alice/jobs",
        "gpus": 0,
        "parameters": {"name": "a'; rm -rf ~; '"},
    }
    assert "#SBATCH --constraint=v100" in script


# --- Slurm's answers ------------------------------------------------------------------------
def test_squeue_of_every_user_reads_and_a_line_forged_through_a_job_name_is_dropped():
    out = (
        "12|alice|RUNNING|sxm2|2|node[001-002]|5:12|1:54:48|2:00:00|2026-11-23T13:00:00|2026-11-23T13:00:05|None\n"
        "13|bob|PENDING|sxm2|1||0:00|2:00:00|2:00:00|2026-11-23T13:01:00|2026-11-23T14:00:00|Resources\n"
        "12|alice|FAILED|sxm2|1|node001|0:01|0:00|1:00:00|2026-11-23T20:00:00|2026-11-23T20:00:00|None\n"
        "garbage line\n"
    )
    # the third line claims alice's job 12: an id listed twice says nothing, and neither line is believed
    assert parse_all_jobs(out) == [
        ListedJob(
            "13",
            "bob",
            "PENDING",
            "sxm2",
            1,
            "",
            "0:00",
            "",
            "2:00:00",
            "2026-11-23T13:01:00",
            "2026-11-23T14:00:00",
            "Resources",
        ),
    ]
    assert parse_all_jobs(out.splitlines(keepends=True)[0]) == [
        ListedJob(
            "12",
            "alice",
            "RUNNING",
            "sxm2",
            2,
            "node[001-002]",
            "5:12",
            "1:54:48",
            "2:00:00",
            "2026-11-23T13:00:00",
            "2026-11-23T13:00:05",
            "",
        )
    ]


def test_sacct_reads_cancelled_by_and_unknown_ends():
    out = (
        "20|alice|sxm2|CANCELLED by 1001|0:15|2026-11-23T12:00:00|None|Unknown|00:00:00|1|None assigned|01:00:00\n"
        "21|alice|sxm2|TIMEOUT|0:0|2026-11-23T12:00:00|2026-11-23T12:00:01|2026-11-23T12:01:01|00:01:00|2|node[001-002]|00:01:00\n"
    )
    assert parse_accounting(out) == [
        AccountedJob(
            "20", "alice", "sxm2", "CANCELLED", "0:15", "2026-11-23T12:00:00", "", "", "00:00:00", 1, "", "01:00:00"
        ),
        AccountedJob(
            "21",
            "alice",
            "sxm2",
            "TIMEOUT",
            "0:0",
            "2026-11-23T12:00:00",
            "2026-11-23T12:00:01",
            "2026-11-23T12:01:01",
            "00:01:00",
            2,
            "node[001-002]",
            "00:01:00",
        ),
    ]


# --- how a run ended, in words ----------------------------------------------------------------
def test_the_runners_lines_say_the_failed_cell():
    tail = "output\ndsportal-run: failed cell=3 error=ZeroDivisionError: division by zero\n"
    assert read_outcome(tail) == Outcome("3", "ZeroDivisionError: division by zero", False, False)
    assert read_outcome("dsportal-run: stopped by Slurm (time limit or cancel)\n").stopped
    assert read_outcome("dsportal-run: done\n").done


@pytest.mark.parametrize(
    "state, kind, outcome, started, words",
    [
        ("COMPLETED", "notebook", Outcome(done=True), True, "Completed."),
        (
            "FAILED",
            "notebook",
            Outcome("3", "ZeroDivisionError: division by zero"),
            True,
            "Failed: cell [3] raised ZeroDivisionError: division by zero; the output notebook keeps the cells that ran.",
        ),
        ("FAILED", "python", Outcome(), True, "Failed (exit status 1); see the log."),
        (
            "TIMEOUT",
            "notebook",
            Outcome(stopped=True),
            True,
            "Reached its time limit of 1 min; the output notebook keeps the cells that ran.",
        ),
        ("CANCELLED", "python", Outcome(), False, "Cancelled before it started."),
        (
            "OUT_OF_MEMORY",
            "python",
            Outcome(),
            True,
            "Ran out of memory; run it with more GPUs per node (each brings memory).",
        ),
        ("", "python", Outcome(), True, "Ended; Slurm no longer lists it and its accounting did not say how."),
    ],
)
def test_each_end_has_its_words(state, kind, outcome, started, words):
    assert ended_why(state, "1:0", "00:01:00", kind, outcome, started) == words


def test_rows_put_queued_jobs_first_and_join_the_runs_record():
    listed = [
        ListedJob(
            "31",
            "alice",
            "PENDING",
            "sxm2",
            1,
            "",
            "0:00",
            "",
            "1:00:00",
            "2026-11-23T13:00:00",
            "2026-11-23T14:00:00",
            "Resources",
        ),
    ]
    accounted = [
        AccountedJob(
            "30",
            "alice",
            "sxm2",
            "FAILED",
            "1:0",
            "2026-11-23T12:00:00",
            "2026-11-23T12:00:01",
            "2026-11-23T12:00:09",
            "00:00:08",
            1,
            "node001",
            "01:00:00",
        ),
        AccountedJob(
            "31",
            "alice",
            "sxm2",
            "PENDING",
            "0:0",
            "2026-11-23T13:00:00",
            "",
            "",
            "00:00:00",
            1,
            "",
            "01:00:00",
        ),
    ]
    runs = [
        {
            "job_id": "31",
            "settings": {"path": "work/train.ipynb", "kind": "notebook", "partition": "sxm2", "nodes": 1, "gpus": 1},
            "output": "jobs/train-31.ipynb",
            "log": ".dsportal-job-31.log",
        },
        {
            "job_id": "30",
            "settings": {"path": "x.ipynb", "kind": "notebook"},
            "state": "FAILED",
            "why": "Failed: cell [2] raised E.",
            "ended": "2026-11-23T12:01",
        },
    ]
    rows = job_rows(listed, accounted, runs, {"31": 3})
    assert [(r["job_id"], r["active"], r["state"]) for r in rows] == [("31", True, "PENDING"), ("30", False, "FAILED")]
    assert rows[0]["words"] == (
        "Waiting in the queue on sxm2: waiting for GPUs to become free (Resources); 3rd in line; "
        "Slurm expects a start at 2026-11-23 14:00."
    )
    assert rows[0]["can_cancel"] and rows[0]["can_again"] and rows[0]["output"] == "jobs/train-31.ipynb"
    assert rows[1]["why"] == "Failed: cell [2] raised E."
    assert not rows[1]["can_cancel"]


def test_a_run_submitted_a_moment_ago_is_shown_before_slurm_lists_it():
    runs = [{"job_id": "40", "settings": {"path": "a.py", "kind": "python", "partition": "sxm2", "nodes": 2}}]
    (row,) = job_rows([], [], runs, {})
    assert (row["active"], row["can_cancel"], row["nodes"], row["name"]) == (True, True, 2, "a.py")


def test_a_run_has_ended_only_when_slurm_says_so_or_long_after():
    running = ListedJob("5", "a", "RUNNING", "p", 1, "n", "", "", "", "", "", "")
    done = ListedJob("5", "a", "COMPLETED", "p", 1, "n", "", "", "", "", "", "")
    old = AccountedJob("5", "a", "p", "COMPLETED", "0:0", "2026-01-01T00:00:00", "", "", "", 1, "", "")
    assert final_state("5", [running], [], 0, 1e9) is None
    assert final_state("5", [done], [], 0, 1e9) == "COMPLETED"
    assert final_state("5", [], [], 1000.0, 1000.0 + GONE_AFTER - 1) is None  # not listed yet: submitted just now
    assert final_state("5", [], [], 1000.0, 1000.0 + GONE_AFTER + 1) == ""
    assert final_state("5", [], [old], 1.8e9, 1.8e9 + 1) is None  # an older job of the same id (Slurm reset)


# --- the runner -------------------------------------------------------------------------
def test_a_script_runs_as_one_process_or_one_per_gpu_across_the_nodes():
    python = RunSpec("python", "/home/a/train.py", "", gpus=2)
    assert one_process_argv(python, 2, "/v/python") is None  # distributed.run: one per GPU, the private folder
    assert one_process_argv(python, 1, "/v/python") is None
    assert one_process_argv(RunSpec("python", "/a.py", ""), 2, "/v/python") is None  # one per node
    assert one_process_argv(RunSpec("python", "/a.py", ""), 1, "/v/python") == ["/v/python", "/a.py"]
    assert one_process_argv(RunSpec("python", "/a.py", "", gpus=1), 1, "/v/python") == ["/v/python", "/a.py"]
    assert one_process_argv(RunSpec("shell", "/a.sh", "", gpus=4), 2, "/v/python") == ["bash", "/a.sh"]


def test_the_output_notebook_is_named_by_the_job():
    assert run_output("/home/a/jobs/", "work/train.v2.ipynb", "17") == "/home/a/jobs/train.v2-17.ipynb"


# --- the mail --------------------------------------------------------------------------------
def test_the_mail_of_a_failed_run(settings):
    subject, body = run_ended_mail(
        "8", "work/fail.ipynb", "Failed: cell [2] raised E.", "jobs/fail-8.ipynb", "https://p/hub/home"
    )
    assert subject == "Job 8 (work/fail.ipynb): Failed"
    assert body == (
        "Your job 8 (work/fail.ipynb) has ended.\n\nFailed: cell [2] raised E.\n\n"
        "Output notebook: ~/jobs/fail-8.ipynb\nJobs panel and log: https://p/hub/home\n"
    )
    mail = message(settings.notify, "alice@example.org", subject + "\nBcc: x@y", body)
    assert (mail["From"], mail["To"], mail["Subject"]) == (
        "portal@example.org",
        "alice@example.org",
        "Job 8 (work/fail.ipynb): Failed\\nBcc: x@y",  # one header, the line break shown (base/printable.py)
    )


def test_the_users_session_is_listed_but_never_cancelled_from_the_panel():
    session = ListedJob("50", "alice", "RUNNING", "sxm2", 1, "node001", "1:00", "7:59:00", "8:00:00", "", "", "")
    other = ListedJob("51", "alice", "RUNNING", "sxm2", 1, "node001", "1:00", "7:59:00", "8:00:00", "", "", "")
    named, row = job_rows([session, other], [], [], {}, frozenset({"50"}))
    assert (named["name"], named["can_cancel"]) == ("job 51", True)
    assert (row["name"], row["kind"], row["active"], row["can_cancel"]) == (
        "JupyterLab session",
        "session",
        True,
        False,
    )


def test_how_long_a_session_waited_in_words():
    assert [waited_words(s) for s in (4.2, 59, 60, 150, 3600, 7500)] == [
        "4 s",
        "59 s",
        "1 min",
        "2 min",
        "1 h",
        "2 h 5 min",
    ]


def test_a_parameters_cell_too_big_for_the_hub_is_refused_at_once():
    many = notebook((["parameters"], "".join(f"p{i} = {i}\n" for i in range(2000))))
    with pytest.raises(NotRunnable, match="more than 200 parameters"):
        notebook_parameters(many, "a.ipynb")
    huge = notebook((["parameters"], "x = '" + "a" * 70_000 + "'\n"))
    with pytest.raises(NotRunnable, match="larger than 64 KiB"):
        notebook_parameters(huge, "a.ipynb")
    with pytest.raises(NotRunnable, match="nests too deeply"):
        notebook_parameters("[" * 100_000 + "]" * 100_000, "a.ipynb")
    with pytest.raises(NotRunnable, match="(nests too deeply|not valid Python)"):
        notebook_parameters(notebook((["parameters"], "x = " + "(" * 2000 + ")" * 2000 + "\n")), "a.ipynb")
    with pytest.raises(ValueError, match="at most 32 KiB of values"):
        check_values({"name": "x" * 40_000}, notebook_parameters(PARAMS, "a.ipynb"), "a.ipynb")


def test_a_default_over_several_lines_is_read_whole():
    cell = "layers = [\n    1,\n    2,\n]  # sizes\n"
    assert notebook_parameters(notebook((["parameters"], cell)), "a.ipynb") == [
        Parameter("layers", "list", "[\n    1,\n    2,\n]", "sizes")
    ]


def test_a_path_with_a_unicode_line_break_is_refused(settings):
    for path in ("a\u2028b.py", "a\u0085b.py"):
        with pytest.raises(OptionsError, match="without line breaks"):
            parse_run({"path": path}, settings)


def test_run_again_repeats_exactly_what_a_user_may_send(settings):
    request = parse_run({"path": "w/a.ipynb", "nodes": 2, "gpus": 1, "hours": 2, "parameters": {"lr": 1}}, settings)
    assert request.settings() == {
        "path": "w/a.ipynb",
        "partition": "sxm2",
        "nodes": 2,
        "gpus": 1,
        "hours": 2.0,
        "parameters": {"lr": 1},
    }
    assert parse_run(request.settings(), settings) == request
    typed = parse_run({"path": "w/a.py", "gpus": 2, "gpu_type": "a100", "account": "nlp"}, settings)
    assert typed.settings() == {
        "path": "w/a.py",
        "partition": "sxm2",
        "nodes": 1,
        "gpus": 2,
        "hours": typed.hours,
        "gpu_type": "a100",
        "account": "nlp",
        "parameters": {},
    }
    assert parse_run(typed.settings(), settings) == typed


def test_a_run_asks_slurm_for_its_gpu_type_account_and_qos(settings):
    offering = settings.model_copy(
        update={"slurm": settings.slurm.model_copy(update={"qos_choices": {"short": "Short"}})}
    )
    request = parse_run(
        {"path": "w/a.py", "gpus": 2, "hours": 1, "gpu_type": "a100", "account": "nlp", "qos": "short"},
        offering,
        {"sxm2": {"a100", "v100"}},
        ("vision", "nlp"),
    )
    argv = sbatch_argv(offering.slurm, run_job(offering, request, Account("alice", "/home/alice")))
    assert [a for a in argv if a.startswith(("--gres", "--account", "--qos"))] == [
        "--gres=gpu:a100:2",
        "--account=nlp",
        "--qos=short",
    ]
    # the same refusals as a session's, before anything is submitted
    with pytest.raises(OptionsError, match='gpu_type: partition sxm2 has no GPUs of type "h100"'):
        parse_run({"path": "w/a.py", "gpus": 1, "gpu_type": "h100"}, offering, {"sxm2": {"a100"}})
    with pytest.raises(OptionsError, match='account: you are not in the Slurm account "physics"'):
        parse_run({"path": "w/a.py", "account": "physics"}, offering, accounts=("vision",))


def test_the_logs_tail_is_cut_from_bytes():
    assert last_lines("a\nb\nc\n", 2) == "b\nc\n"
    assert tail_argv(SimpleNamespace(sudo="sudo"), "alice", "/home/alice/x.log") == [
        "sudo", "-n", "-u", "alice", "--", "tail", "-c", "262144", "--", "/home/alice/x.log",
    ]  # fmt: skip

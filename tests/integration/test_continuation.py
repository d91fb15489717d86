"""A session continued in a new Slurm job on the real dev cluster: its notebooks' variables carried across.

alice's session (one stand-in GPU) has a notebook whose kernel holds a trained model's weights and a socket, and
an R notebook with a data frame.  She continues it: the hub asks her server to carry the kernels out, cancels the
job and starts a new one of the same shape.  When the notebooks open again, their new kernels hold the same
weights and the same data frame; the socket is named as not carried; the carried files are deleted once taken
back.  Her terminal opens again in the folder its shell was in.  A session's own token (a guest can read it)
cannot continue it, and a session chosen to continue automatically does so before its end."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.cluster import url_for
from tests.support.http import json_request
from tests.support.jobs import JobsClient
from tests.support.jupyter import _execute, _type, run_code

NOTEBOOK = "carry/train.ipynb"
R_NOTEBOOK = "carry/stats.ipynb"
SHAPE = ("Partition=", "NumNodes=", "TresPerNode=", "Account=", "QOS=")
TRAIN = """
import socket
weights = [round(0.5 * i, 1) for i in range(6)]
epoch = 12
link = socket.socket()
print("trained", weights)
"""


def open_notebook(cluster, user: str, path: str = NOTEBOOK, kernel: str = "python3") -> str:
    """JupyterLab opening a notebook: a session of the server's with a new kernel; -> the kernel's id."""
    body = {"path": path, "type": "notebook", "name": path.rsplit("/", 1)[-1], "kernel": {"name": kernel}}
    status, made = cluster.request("POST", f"/user/{user}/api/sessions", body, timeout=60)
    assert status == 201, made
    return made["kernel"]["id"]


def run(cluster, user: str, kernel: str, code: str) -> str:
    status, printed = asyncio.run(_execute(cluster, f"/user/{user}/api/kernels/{kernel}/channels", code, 120))
    assert status == "ok", printed
    return printed


def type_in(cluster, name: str, command: str, expect: str) -> str:
    return asyncio.run(_type(cluster, f"/user/alice/terminals/websocket/{name}", command, expect, 60))


def shape_of(scontrol: str) -> list[str]:
    return sorted(word for word in scontrol.split() if word.startswith(SHAPE))


def continue_session(token: str, server: str = "") -> tuple[int, dict]:
    return json_request("POST", url_for("/hub/api/dsportal/continue"), {"server": server}, token=token, timeout=300)


@pytest.mark.slurm
def test_a_session_continues_in_a_new_job_with_its_notebooks_variables(cluster):
    alice = JobsClient.for_user("alice")
    options = {"partition": "sxm2", "gpus": 1, "hours": 1}
    assert cluster.start("alice", options) in (201, 202)
    old_job = cluster.job_of("alice")
    cluster.wait_ready("alice")
    kernel = open_notebook(cluster, "alice")
    assert "trained [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]" in run(cluster, "alice", kernel, TRAIN)
    shape = shape_of(cluster.scontrol(old_job))
    r_kernel = open_notebook(cluster, "alice", R_NOTEBOOK, "ir")
    run(cluster, "alice", r_kernel, "survey <- data.frame(a = 1:3, b = c('x', 'y', 'z'))")
    # a terminal, its shell moved into the notebook's folder
    alice.write("carry/notes.txt", "a terminal works here\n")
    status, term = cluster.request("POST", "/user/alice/api/terminals")
    assert status == 200, term
    typed = type_in(cluster, term["name"], "cd ~/carry && pwd", "/home/alice/carry")
    assert "/home/alice/carry" in typed

    asked = time.monotonic()
    status, answer = continue_session(alice.token)
    assert status == 202, answer
    assert answer["continued_from"] == old_job
    assert answer["notebooks"] == {
        NOTEBOOK: {"carried": 2, "not": {"link": "a socket cannot be carried into a new job"}},
        R_NOTEBOOK: {"carried": 1, "not": {}},
    }
    assert answer["words"] == f"Continued from job {old_job}: 2 notebook(s): 3 variable(s) carried, 1 not."
    cluster.wait(lambda: old_job not in cluster.jobs("alice"), 30, "the old job gone")  # cancelled
    new_job = cluster.job_of("alice")
    assert new_job != old_job
    cluster.wait_ready("alice")
    assert shape_of(cluster.scontrol(new_job)) == shape  # the same partition, GPUs, account and QOS

    kernel = open_notebook(cluster, "alice")  # JupyterLab opens the notebook again, with a new kernel
    cluster.wait(
        lambda: "True" in run(cluster, "alice", kernel, "print('weights' in dir())"), 60, "the weights taken back"
    )
    print(f"hand-over: {time.monotonic() - asked:.1f} s from the continue to the notebook's variables back")
    assert run(cluster, "alice", kernel, "print(weights, epoch)").strip() == "[0.0, 0.5, 1.0, 1.5, 2.0, 2.5] 12"
    r_kernel = open_notebook(cluster, "alice", R_NOTEBOOK, "ir")  # the R notebook's data frame comes back too
    cluster.wait(
        lambda: "x y z" in run(cluster, "alice", r_kernel, "if (exists('survey')) cat(as.character(survey$b))"),
        60,
        "the R data frame taken back",
    )
    status, said = cluster.request("GET", "/user/alice/dsportal/continuation")
    assert status == 200, said
    assert {k: v for k, v in said.items() if k != "terminals"} == {
        "continued_from": old_job,
        "restored": {
            NOTEBOOK: {"carried": 2, "not": {"link": "a socket cannot be carried into a new job"}},
            R_NOTEBOOK: {"carried": 1, "not": {}},
        },
        "waiting": [],
    }
    assert said["terminals"] == [term["name"]]  # the terminal, open again in its folder
    assert "notes.txt" in type_in(cluster, term["name"], "ls", "notes.txt")
    carried = alice.home / ".dsportal" / "continuation" / old_job
    cluster.wait(lambda: not carried.exists(), 30, "the carried files deleted once taken back")
    status, home = json_request("GET", url_for("/hub/api/dsportal/session"), token=alice.token)
    assert status == 200 and home["session"]["continued"] == answer["words"], home["session"]  # the card says it
    cluster.stop("alice")


@pytest.mark.slurm
def test_a_sessions_own_token_cannot_continue_it(cluster):
    """A guest of a shared session can read its token: with it, no continuation (it charges the owner)."""
    assert cluster.start("bob", {"partition": "cpu", "gpus": 0, "hours": 1}) in (201, 202)
    job = cluster.job_of("bob")
    cluster.wait_ready("bob")
    status, printed = run_code(cluster, "bob", "python3", "import os; print(os.environ['JUPYTERHUB_API_TOKEN'])")
    assert status == "ok", printed
    session_token = printed.strip()
    status, refused = continue_session(session_token)
    assert status == 403, refused
    assert refused["message"].startswith("A session's own token cannot continue a session")
    assert cluster.job_of("bob") == job  # nothing stopped
    cluster.stop("bob")


@pytest.mark.side
@pytest.mark.slurm
def test_a_session_chosen_to_continue_automatically_does_so_before_its_end(cluster):
    """erin's 12-minute session is long enough to continue on its own (at least twice the hub's lead: Slurm's
    warning and a kernel's dump); once she chooses it, the hub's loop continues it that lead before its end, her
    notebook's variables with it.  A 3-minute session is offered no such choice: its successor would be due at
    once, and so on."""
    erin = JobsClient.for_user("erin")
    assert cluster.start("erin", {"partition": "cpu", "gpus": 0, "hours": 0.05}) in (201, 202)
    cluster.wait_ready("erin")
    status, home = json_request("GET", url_for("/hub/api/dsportal/session"), token=erin.token)
    assert home["session"]["continuable"] is True and "auto_continue" not in home["session"], home["session"]
    cluster.stop("erin")

    assert cluster.start("erin", {"partition": "cpu", "gpus": 0, "hours": 0.2}) in (201, 202)
    old_job = cluster.job_of("erin")
    cluster.wait_ready("erin")
    kernel = open_notebook(cluster, "erin")
    run(cluster, "erin", kernel, "epoch = 41")
    choose = url_for("/hub/api/dsportal/continue/automatically")
    status, chosen = json_request("POST", choose, {"server": "", "on": True}, token=erin.token)
    assert (status, chosen) == (200, {"server": "", "on": True})
    status, home = json_request("GET", url_for("/hub/api/dsportal/session"), token=erin.token)
    lead = home["session"]["auto_lead_minutes"]  # the admin's save_minutes and dump_seconds, and 30 s
    assert home["session"]["auto_continue"] is True and 1 <= lead < 6, home["session"]
    started = time.monotonic()
    # 12 minutes less the lead: about 6.5 minutes from the start
    new_job = cluster.wait(lambda: next((j for j in cluster.jobs("erin") if j != old_job), None), 600, "a new job")
    waited = time.monotonic() - started
    print(f"continued automatically {waited:.0f} s after the choice ({lead} min before a 12-minute job's end)")
    assert waited >= (12 - lead - 2) * 60  # not at once: within the lead of its end (the loop looks every 15 s)
    # off again: the new job, 12 minutes long too, would be continued in its turn
    assert json_request("POST", choose, {"server": "", "on": False}, token=erin.token)[0] == 200
    cluster.wait_ready("erin")
    assert cluster.job_of("erin") == new_job
    kernel = open_notebook(cluster, "erin")
    cluster.wait(lambda: "41" in run(cluster, "erin", kernel, "print(globals().get('epoch'))"), 60, "epoch back")
    status, refused = json_request("POST", choose, {"server": "", "on": "yes"}, token=erin.token)
    assert status == 400 and refused["message"].startswith('"server" is the session')
    cluster.stop("erin")

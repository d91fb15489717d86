"""Notebooks and scripts as Slurm jobs of the user, on the real dev cluster (real Slurm, slurmdbd, exim).

Through the hub's REST API with a user's own token, as JupyterLab's dialog and
jobs panel use it (the session's server only passes it on: test_jobs_panel in
tests/browser).  Each test makes the files it runs in the user's home, as the user.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime

import pytest

from spawner.contract import data_dir
from tests.support.hosts import node_of, on_node
from tests.support.jobs import JobsClient
from tests.support.mail import wait_for_mail

PARAMS = "lr = 0.01  # learning rate\nepochs = 2\nname = 'run'\n"


@pytest.fixture(scope="module")
def alice() -> JobsClient:
    return JobsClient.for_user("alice")


@pytest.fixture(scope="module")
def bob() -> JobsClient:
    return JobsClient.for_user("bob")


def outputs(path) -> list[str]:
    """The text each code cell of an output notebook printed, in order."""
    notebook = json.loads(path.read_text())
    return [
        "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
    ]


def users_jobs(user: str) -> set[str]:
    """Every job of `user` that Slurm's accounting knows of today (what a refusal must not add to)."""
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-u", user, "--starttime=now-1day", "-o", "JobID"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return set(out.split())


def pending_seconds(job_id: str) -> float:
    """How long Slurm has held the job since its submission (squeue's %V)."""
    out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%V"], capture_output=True, text=True, timeout=30)
    submitted = out.stdout.strip()
    return (datetime.now() - datetime.fromisoformat(submitted)).total_seconds() if submitted else 0.0


@pytest.mark.slurm
def test_a_notebook_runs_with_changed_parameters_and_keeps_its_output(alice, cluster):
    alice.put_notebook("runs/params.ipynb", ["print(f'{name}: lr={lr} epochs={epochs}')"], PARAMS)
    status, form = alice.request("GET", "runs/form?path=runs/params.ipynb")
    assert status == 200, form
    assert [(p["name"], p["type"], p["default"]) for p in form["parameters"]] == [
        ("lr", "float", "0.01"),
        ("epochs", "int", "2"),
        ("name", "str", "'run'"),
    ]
    # the choices the dialog offers: sxm2's GPU types (none on the CPU-only partition), alice's accounts (her
    # default first), the admin's QOS
    types = {p["name"]: [t["name"] for t in p["gpu_types"]] for p in form["partitions"]}
    assert (types["sxm2"], types["cpu"]) == (["a100", "v100"], [])
    assert [a["name"] for a in form["accounts"]] == ["vision", "nlp"]
    assert form["qos"] == [{"name": "short", "label": "Short"}, {"name": "long", "label": "Long"}]
    run = alice.submit({"path": "runs/params.ipynb", "hours": 0.25, "parameters": {"lr": 0.5, "name": "changed"}})
    row = alice.wait_ended(run["job_id"])
    assert (row["state"], row["why"]) == ("COMPLETED", "Completed."), row
    assert row["output"] == f"jobs/params-{run['job_id']}.ipynb"
    printed = outputs(alice.home / row["output"])
    assert printed[-1] == "changed: lr=0.5 epochs=2\n"  # papermill injected the changed values after the defaults
    assert (alice.home / row["output"]).stat().st_uid == alice.home.stat().st_uid  # written by alice's job
    # Run again: the same file and settings, the same changed parameters, a new job
    status, again = alice.request("POST", f"runs/{run['job_id']}/again")
    assert status == 201, again
    assert again["job"]["job_id"] != run["job_id"] and again["job"]["settings"] == run["settings"]
    row = alice.wait_ended(again["job"]["job_id"])
    assert outputs(alice.home / row["output"])[-1] == "changed: lr=0.5 epochs=2\n"


def test_a_cell_that_raises_fails_the_job_and_the_panel_names_it(alice, cluster):
    alice.put_notebook("runs/fails.ipynb", ["print('before')", "1 / 0", "print('never')"])
    run = alice.submit({"path": "runs/fails.ipynb", "hours": 0.25})
    row = alice.wait_ended(run["job_id"])
    assert row["state"] == "FAILED"
    assert row["why"] == (
        "Failed: cell [2] raised ZeroDivisionError: division by zero; the output notebook keeps the cells that ran."
    )
    assert outputs(alice.home / row["output"])[:1] == ["before\n"]


def test_cancel_from_the_panel_ends_only_that_job(alice, cluster):
    alice.put_notebook("runs/slow.ipynb", ["print('started', flush=True)", "import time; time.sleep(600)"])
    run = alice.submit({"path": "runs/slow.ipynb", "hours": 0.25})
    other = alice.submit({"path": "runs/slow.ipynb", "hours": 0.25})
    alice.wait_log(run["job_id"], "started", 60)
    status, answer = alice.request("POST", f"runs/{run['job_id']}/cancel")
    assert status == 200, answer
    row = alice.wait_ended(run["job_id"])
    assert row["state"] == "CANCELLED" and row["why"].startswith("Cancelled"), row
    assert alice.rows()[other["job_id"]]["active"]
    assert alice.request("POST", f"runs/{other['job_id']}/cancel")[0] == 200


@pytest.mark.side  # mostly waits for Slurm's time limit: as grace, beside the main lane (tests/support/lanes.py)
def test_a_job_at_its_time_limit_keeps_its_partial_output(cluster):
    grace = JobsClient.for_user("grace")
    grace.put_notebook("runs/long.ipynb", ["print('first cell done')", "import time; time.sleep(900)"])
    run = grace.submit({"path": "runs/long.ipynb", "hours": 1 / 60})  # one minute
    row = grace.wait_ended(run["job_id"], timeout=240)  # Slurm checks time limits every 30 s, then KillWait
    assert row["state"] == "TIMEOUT", row
    assert row["why"] == "Reached its time limit of 1 min; the output notebook keeps the cells that ran."
    assert outputs(grace.home / row["output"])[0] == "first cell done\n"
    assert "stopped by Slurm" in grace.log(run["job_id"])


@pytest.mark.slurm
def test_the_multi_gpu_template_trains_across_both_nodes(alice, cluster):
    for name in ("multi-gpu-pytorch.ipynb", "ddp_train.py"):  # the templates as the portal ships them
        alice.write(f"runs/ddp/{name}", (data_dir("notebooks") / name).read_text())
    run = alice.submit(
        {
            "path": "runs/ddp/multi-gpu-pytorch.ipynb",
            "nodes": 2,
            "gpus": 1,
            "hours": 0.25,
            "parameters": {"epochs": 1, "log_every": 20},
        }
    )
    row = alice.wait_ended(run["job_id"], timeout=300)
    assert (row["state"], row["nodes"]) == ("COMPLETED", 2), (row, alice.log(run["job_id"]))
    printed = "".join(outputs(alice.home / row["output"]))
    assert "2 nodes: 4 processes in all" in printed, printed
    assert all(f"rank {r}/4 done" in printed for r in range(4)), printed
    steps = subprocess.run(
        ["sacct", "-n", "-P", "-j", run["job_id"], "-o", "JobID,NNodes,State"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.split()
    assert f"{run['job_id']}.0|2|COMPLETED" in steps, steps  # srun's step: the processes of both nodes


def test_bad_input_is_refused_with_words_and_submits_nothing(alice, cluster):
    alice.put_notebook("runs/params.ipynb", ["print(lr)"], PARAMS)
    alice.write("runs/broken.ipynb", '{"cells": [')
    before = users_jobs("alice")
    for body, status, words in [
        ({"path": "runs/params.ipynb", "parameters": {"lr": "fast"}}, 400, "parameters: lr must be a number"),
        ({"path": "runs/params.ipynb", "parameters": {"nope": 1}}, 400, "has no parameter 'nope'"),
        ({"path": "runs/params.ipynb", "partition": "gpu-huge"}, 400, 'partition: "gpu-huge" is not offered here'),
        ({"path": "runs/params.ipynb", "nodes": 3}, 400, "nodes: 3 is out of range"),
        ({"path": "runs/params.ipynb", "gpus": 5}, 400, "gpus: 5 is out of range"),
        ({"path": "runs/broken.ipynb"}, 400, "runs/broken.ipynb is not a valid notebook: it is not JSON"),
        ({"path": "runs/missing.ipynb"}, 400, "there is no such file in your home"),
        ({"path": "../bob/x.ipynb"}, 400, "is outside your home"),
    ]:
        got, answer = alice.request("POST", "runs", body)
        assert (got, words in str(answer.get("message"))) == (status, True), (body, answer)
    assert users_jobs("alice") == before


def test_the_hub_reads_a_users_file_only_as_that_user(alice, cluster):
    # a link to a file only root may read: the hub reads as alice, so it is refused, never read as root
    subprocess.run(
        ["runuser", "-u", "alice", "--", "ln", "-sfn", "/etc/shadow", str(alice.home / "shadow.ipynb")],
        check=True,
        timeout=30,
    )
    status, answer = alice.request("GET", "runs/form?path=shadow.ipynb")
    assert (status, answer["message"]) == (400, "shadow.ipynb: you may not read this file.")


def test_another_user_can_neither_see_nor_cancel_nor_read_a_job(alice, bob, cluster):
    alice.put_notebook("runs/slow.ipynb", ["print('started', flush=True)", "import time; time.sleep(600)"])
    run = alice.submit({"path": "runs/slow.ipynb", "hours": 0.25})
    alice.wait_log(run["job_id"], "started", 60)
    assert run["job_id"] not in bob.rows()
    for method, path in [
        ("POST", f"jobs/{run['job_id']}/cancel"),
        ("GET", f"jobs/{run['job_id']}/log"),
        ("POST", f"jobs/{run['job_id']}/again"),
    ]:
        status, answer = bob.request(method, path)
        assert status == 404, (path, answer)
    assert alice.rows()[run["job_id"]]["active"]  # still running
    status, answer = alice.request("GET", f"runs/{run['job_id']}/log?lines=50")
    assert status == 200 and "started" in answer["log"]


def test_a_runs_kernel_is_out_of_reach_of_other_users_on_the_node(alice, bob, cluster):
    # The attack: bob, on the same node, connects to the kernel of alice's run. Jupyter's default (TCP on
    # 127.0.0.1) lets him; the runner's kernels speak over Unix sockets in a folder only alice can enter.
    alice.put_notebook(
        "runs/kernel.ipynb",
        [
            "import glob, json, os\n"
            "runtime = os.environ['JUPYTER_RUNTIME_DIR']\n"
            "info = json.load(open(glob.glob(runtime + '/kernel-*.json')[0]))\n"
            "print('KERNEL', json.dumps({'transport': info['transport'], 'ip': info['ip'], 'shell': info['shell_port']}), flush=True)",
            "import time; time.sleep(600)",
        ],
    )
    run = alice.submit({"path": "runs/kernel.ipynb", "hours": 0.25})
    line = alice.wait_log(run["job_id"], "KERNEL ", 90)
    kernel = json.loads(line.split("KERNEL ", 1)[1].splitlines()[0])
    if kernel["transport"] == "tcp":  # Jupyter's default: the kernel's shell port on the node's loopback
        target = f"socket.AF_INET); s.connect(({kernel['ip']!r}, {kernel['shell']}))"
    else:  # a Unix socket: its path
        target = f"socket.AF_UNIX); s.connect({kernel['ip'] + '-' + str(kernel['shell'])!r})"
    attack = subprocess.run(  # bob in a terminal on the run's node
        on_node(
            node_of(run["job_id"]),
            ["/opt/dsportal/venv/bin/python", "-c", f"import socket; s = socket.socket({target}; print('CONNECTED')"],
            user="bob",
        ),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "CONNECTED" not in attack.stdout, kernel  # bob reached alice's kernel
    assert "PermissionError" in attack.stderr, attack.stderr
    assert kernel["transport"] == "ipc"
    alice.request("POST", f"runs/{run['job_id']}/cancel")


def test_mail_when_a_job_ends_for_a_user_who_opted_in(alice, cluster):
    status, state = alice.request("POST", "notify", {"mail": True})
    assert (status, state) == (200, {"mail": True, "address": "alice@dsportal.test"})
    try:
        alice.put_notebook("runs/mail.ipynb", ["print('hi')"])
        run = alice.submit({"path": "runs/mail.ipynb", "hours": 0.25})
        mail = wait_for_mail("alice", f"Job {run['job_id']} (runs/mail.ipynb): Completed", timeout=120)
        body = mail.get_payload(decode=True).decode()
        assert f"Output notebook: ~/jobs/mail-{run['job_id']}.ipynb" in body
        assert mail["From"] == "dsportal@dsportal.test"
    finally:
        assert alice.request("POST", "notify", {"mail": False})[0] == 200


@pytest.mark.slurm
@pytest.mark.alone  # needs 2 GPUs free on each node
def test_scripts_run_one_process_per_gpu_across_the_nodes(alice, cluster):
    alice.write(
        "runs/ranks.py",
        "import os, sys\n"
        "# one write per line: the four processes share the job's log, and their lines must not interleave\n"
        "sys.stdout.write(f\"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} on {os.environ['SLURMD_NODENAME']}\\n\")\n",
    )
    alice.write("runs/nodes.sh", "#!/bin/bash\nsrun --ntasks-per-node=1 bash -c 'echo shell on $SLURMD_NODENAME'\n")
    python = alice.submit({"path": "runs/ranks.py", "nodes": 2, "gpus": 2, "hours": 0.25})
    shell = alice.submit({"path": "runs/nodes.sh", "nodes": 2, "hours": 0.25})
    for run in (python, shell):
        row = alice.wait_ended(run["job_id"], timeout=180)
        assert row["state"] == "COMPLETED", (row, alice.log(run["job_id"]))
    ranks = re.findall(r"rank ([0-9]+) of ([0-9]+) on (node[0-9]+)", alice.log(python["job_id"]))
    # one process per GPU: ranks 0-3 of 4, two on each node (Slurm's task numbers as ranks)
    assert sorted(int(r[0]) for r in ranks) == [0, 1, 2, 3] and {r[1] for r in ranks} == {"4"}, ranks
    assert sorted(r[2] for r in ranks) == ["node001", "node001", "node002", "node002"], ranks
    shells = sorted(line for line in alice.log(shell["job_id"]).splitlines() if line.startswith("shell on "))
    assert shells == ["shell on node001", "shell on node002"]


@pytest.mark.alone  # takes every debug GPU: another waits for Resources
def test_mail_when_a_queued_session_starts_and_before_its_time_limit(alice, bob, cluster):
    # bob's job holds every GPU of the debug partition; alice's session waits behind it, then starts.  He submits
    # it with sbatch himself: through the portal, 8 GPUs pass sessions.max_gpus_per_user (4 in the dev config)
    hold = subprocess.run(
        ["sudo", "-u", "bob", "sbatch", "--parsable", "-p", "debug", "-N", "2", "--gres=gpu:4", "-t", "15"]
        + ["-o", "/dev/null", "--wrap", "sleep 600"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd="/tmp",
    ).stdout.strip()
    bob.wait_state(hold, {"RUNNING"}, 60)
    assert alice.request("POST", "notify", {"mail": True})[0] == 200
    try:
        cluster.start("alice", {"partition": "debug", "gpus": 4, "hours": 0.25})  # 15 minutes: at once "15 min left"
        alice.wait_state(cluster.job_of("alice"), {"PENDING"}, 30)
        session = cluster.job_of("alice")
        cluster.wait(lambda: cluster.jobs("alice")[session]["reason"] == "Resources", 30, "alice's session queued")
        # queued longer than notify.queued_seconds (5 in the dev config): a queued session, whose start is mailed
        cluster.wait(lambda: pending_seconds(session) >= 6, 30, "alice's session 6 s in the queue")
        subprocess.run(["sudo", "-u", "bob", "scancel", hold], check=True, timeout=60)
        cluster.wait_ready("alice", 120)
        started = wait_for_mail("alice", "Your session has started on node", timeout=60)
        assert "after waiting" in started.get_payload(decode=True).decode()
        ending = wait_for_mail("alice", "Your session ends in 1", timeout=60)  # 15 (or 14) minutes
        assert "reaches its time limit at" in ending.get_payload(decode=True).decode()
    finally:
        subprocess.run(["scancel", hold], timeout=60)
        assert alice.request("POST", "notify", {"mail": False})[0] == 200

"""A receipt from the user's record and the job's environment file; what of it cannot be had again
(spawner/hub/receipts/receipt.py)."""

from __future__ import annotations

import json
from datetime import datetime

from spawner.hub.receipts.receipt import (
    environment_of,
    installed_of,
    run_receipt,
    session_receipt,
    submitted_at,
    what_is_gone,
)

SUBMITTED = 1_764_400_000.0
WRITTEN = {
    "job_id": "42",
    "written": 1_764_400_030,
    "kind": "session",
    "nodes": "node002",
    "portal": "0.2.0",
    "python": "/home/alice/.local/share/dsportal/python3.11/bin/python",
    "packages": ["dsportal==0.2.0", "numpy==1.26.4", "torch==2.5.1"],
    "modules": ["cuda/12.4"],
    "kernels": [{"name": "python3"}, {"name": "ngc-pytorch", "image": "/isilon/pytorch.sif", "digest": "sha256:ab"}],
    "git": {"folder": "/home/alice", "commit": "0123abcd", "changed": True},
}
ENVIRONMENT = {
    "nodes": "node002",
    "portal": "0.2.0",
    "python": "/home/alice/.local/share/dsportal/python3.11/bin/python",
    "packages": ["dsportal==0.2.0", "numpy==1.26.4", "torch==2.5.1"],
    "modules": ["cuda/12.4"],
    "kernels": [{"name": "python3"}, {"name": "ngc-pytorch", "image": "/isilon/pytorch.sif", "digest": "sha256:ab"}],
    "git": {"folder": "/home/alice", "commit": "0123abcd", "changed": True},
    "notes": [],
}
ENTRY = {
    "job_id": "42",
    "summary": "1 GPU (a100) · 8 cores · 48 GB RAM · 2 h on sxm2",
    "options": {"partition": "sxm2", "gpu_type": "a100", "gpus": 1, "hours": 2},
    "submitted": "2026-11-29T09:00",
    "ended": "2026-11-29T11:00",
    "why": "Your session reached its time limit.",
    "name": "train",
    "usage": {"lines": ["GPU 0 busy 81% of the time"], "source": "slurm", "tally": {}},
}
LOGGED = {"job_id": "42", "partition": "sxm2", "gpus": 1, "hours": 2.0, "gpu_hours": 2.0, "gpu_mean": 81,
          "gpus_worked": 1, "cpu_efficiency": 0.4, "accounted": True, "ended": "2026-11-29T11:00"}  # fmt: skip


def test_the_jobs_environment_is_read_back_typed():
    assert environment_of(json.dumps(WRITTEN), "42", SUBMITTED) == (ENVIRONMENT, "")


def test_an_environment_that_is_missing_or_of_another_job_says_why():
    assert environment_of("", "42", SUBMITTED)[0] is None
    assert "recorded no environment" in environment_of("", "42", SUBMITTED)[1]
    assert environment_of("{not json", "42", SUBMITTED) == (None, "the job's environment file does not read as JSON")
    assert environment_of(json.dumps({**WRITTEN, "job_id": "43"}), "42", SUBMITTED) == (
        None,
        "the job's environment file is of another job",
    )
    assert environment_of("[1, 2]", "42", SUBMITTED)[0] is None
    # an earlier job's of the same id (Slurm's ids start again after a reinstall), or of no known time
    earlier = {**WRITTEN, "written": SUBMITTED - 3600}
    assert environment_of(json.dumps(earlier), "42", SUBMITTED)[1].startswith("the job recorded no environment")
    assert environment_of(json.dumps({**WRITTEN, "written": "now"}), "42", SUBMITTED)[0] is None
    assert environment_of(json.dumps({**WRITTEN, "written": SUBMITTED - 60}), "42", SUBMITTED)[0] is not None


def test_a_file_nested_thousands_deep_is_no_environment_and_no_error():
    for text in ("[" * 200_000, '{"a":' * 100_000):
        assert environment_of(text, "42", SUBMITTED) == (None, "the job's environment file does not read as JSON")


def test_the_submission_time_of_a_run_and_of_a_session():
    assert submitted_at({"submitted_ts": 1_764_400_000.5, "submitted": "2026-11-29T09:00"}) == 1_764_400_000.5
    assert submitted_at({"submitted": "2026-11-29T09:00"}) == datetime(2026, 11, 29, 9, 0).timestamp()
    assert submitted_at({"submitted": "yesterday"}) == submitted_at({}) == 0.0


def test_a_hostile_environment_file_keeps_only_known_keys_of_known_types_bounded():
    hostile = {
        "job_id": "42",
        "written": 1,
        "nodes": ["not", "text"],
        "portal": "x" * 10_000,
        "packages": ["ok==1", "no version", "<script>==1", {"a": 1}, "evil==1 ; rm -rf /", *(["p==1"] * 5000)],
        "modules": "cuda",  # not a list
        "kernels": [{"name": "k", "image": 3, "extra": "dropped"}, "x", {"image": "/nameless.sif"}],
        "git": {"folder": "/h", "commit": "c", "changed": "yes"},
        "notes": ["n"] * 50,
        "admin": True,
    }
    facts, why = environment_of(json.dumps(hostile), "42", 0)
    assert why == ""
    assert set(facts) == set(ENVIRONMENT)
    assert facts["nodes"] == "" and len(facts["portal"]) == 500
    assert facts["packages"][:1] == ["ok==1"] and len(facts["packages"]) == 3000 - 3
    assert facts["modules"] == [] and facts["kernels"] == [{"name": "k"}]
    assert facts["git"] == {"folder": "/h", "commit": "c", "changed": None}
    assert len(facts["notes"]) == 5


def test_a_sessions_receipt_holds_its_request_job_use_and_environment():
    assert session_receipt(ENTRY, LOGGED, ENVIRONMENT, "", "alice") == {
        "receipt": 1,
        "kind": "session",
        "user": "alice",
        "job_id": "42",
        "name": "train",
        "request": {"partition": "sxm2", "gpu_type": "a100", "gpus": 1, "hours": 2},
        "summary": "1 GPU (a100) · 8 cores · 48 GB RAM · 2 h on sxm2",
        "submitted": "2026-11-29T09:00",
        "ended": "2026-11-29T11:00",
        "why": "Your session reached its time limit.",
        "used": {"lines": ["GPU 0 busy 81% of the time"], "source": "slurm"},
        "accounted": {
            "partition": "sxm2",
            "gpus": 1,
            "hours": 2.0,
            "gpu_hours": 2.0,
            "gpu_mean": 81,
            "gpus_worked": 1,
            "cpu_efficiency": 0.4,
            "accounted": True,
        },
        "environment": ENVIRONMENT,
        "environment_missing": "",
    }


def test_a_sweeps_receipt_is_a_sweeps():
    run = {
        "job_id": "77",
        "kind": "notebook",
        "settings": {"path": "mnist.ipynb", "partition": "sxm2", "gpus": 1, "hours": 0.5, "sweep": {"lr": [1, 2]}},
        "summary": "2 runs",
        "submitted": "2026-11-29T10:00",
        "ended": "2026-11-29T10:20",
        "state": "COMPLETED",
        "why": "",
    }
    made = run_receipt(run, None, None, "no file", "erin")
    assert (made["kind"], made["path"], made["state"], made["accounted"], made["environment_missing"]) == (
        "sweep",
        "mnist.ipynb",
        "COMPLETED",
        None,
        "no file",
    )
    assert run_receipt({**run, "settings": {"path": "a.py"}}, None, None, "", "erin")["kind"] == "run"


def test_what_cannot_be_had_again_is_said_and_nothing_when_all_is_here():
    receipt = session_receipt(ENTRY, LOGGED, ENVIRONMENT, "", "alice")
    here = {"sxm2": {"a100", "v100"}, "cpu": set()}
    same = installed_of(["DSPortal==0.2.0", "numpy==1.26.4", "torch==2.5.1", "extra==1"])
    assert what_is_gone(receipt, here, same) == []
    assert what_is_gone(receipt, here, None) == []  # the environment unknown here: nothing said of it
    assert what_is_gone(receipt, {"sxm2": {"v100"}}, same) == ["GPU type a100 is no longer offered on sxm2"]
    assert what_is_gone(receipt, {"pcie": set()}, same) == ["partition sxm2 is no longer offered"]
    newer = installed_of(["numpy==2.1.0", "Torch==2.5.1"])
    assert what_is_gone(receipt, here, newer) == [
        "the portal's environment has other versions of numpy 1.26.4 (now 2.1.0)"
    ]


def test_package_names_compare_as_pypi_does():
    assert installed_of(["Jupyter_Server==2.14.0", "ruamel.yaml==0.18", "junk"]) == {
        "jupyter-server": "2.14.0",
        "ruamel-yaml": "0.18",
    }


def test_a_container_kernel_gone_or_changed_is_said():
    receipt = session_receipt(ENTRY, LOGGED, ENVIRONMENT, "", "alice")
    here = {"sxm2": {"a100"}}
    assert what_is_gone(receipt, here, None, {"ngc-pytorch": "sha256:ab"}) == []
    assert what_is_gone(receipt, here, None, {}) == ["container kernel ngc-pytorch is no longer offered"]
    assert what_is_gone(receipt, here, None, {"ngc-pytorch": "sha256:cd"}) == [
        "container kernel ngc-pytorch's image has changed (sha256:ab then, sha256:cd now)"
    ]
    assert what_is_gone(receipt, here, None, {"ngc-pytorch": ""}) == [
        "container kernel ngc-pytorch's image has changed (sha256:ab then, unknown now)"
    ]

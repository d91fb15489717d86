"""What a session or run ran with, as the job records it for its receipt (spawner/job/receipts/environment.py)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from spawner.contract import RECEIPT_ENVIRONMENT_BYTES, receipt_environment
from spawner.job.receipts import environment as env


def test_the_packages_are_those_the_python_imports_by_name_and_version():
    listed, note = env.packages(sys.executable)
    assert note == ""
    names = {p.split("==")[0].lower() for p in listed}
    assert {"pydantic", "jupyterhub", "pytest"} <= names
    assert all(p.count("==") == 1 for p in listed)
    assert listed == sorted(listed, key=str.lower)


def test_packages_that_cannot_be_listed_are_a_note_not_a_failure():
    def slow(*a, **k):
        raise subprocess.TimeoutExpired(a[0], 30)

    assert env.packages("python", run=slow) == ([], "the packages could not be listed (TimeoutExpired)")
    broken = lambda *a, **k: SimpleNamespace(returncode=1, stdout="", stderr="boom")  # noqa: E731
    assert env.packages("python", run=broken) == ([], "the packages could not be listed (exit 1)")
    many = lambda *a, **k: SimpleNamespace(returncode=0, stdout=json.dumps([f"p{i}==1" for i in range(3001)]))  # noqa: E731
    listed, note = env.packages("python", run=many)
    assert (len(listed), note) == (3000, "3001 packages, the first 3000 kept")


def test_the_modules_are_lmods_list_in_load_order():
    assert env.loaded_modules({"LOADEDMODULES": "cuda/12.4:gcc/13::python/3.11"}) == [
        "cuda/12.4",
        "gcc/13",
        "python/3.11",
    ]
    assert env.loaded_modules({}) == []


def test_a_git_folder_gives_its_commit_and_whether_tracked_files_changed(tmp_path):
    assert env.git_state(tmp_path) is None
    git = ["git", "-C", str(tmp_path), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "train.ipynb").write_text("{}")
    subprocess.run([*git, "add", "train.ipynb"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert env.git_state(tmp_path) == {"folder": str(tmp_path), "commit": commit, "changed": False}
    (tmp_path / "notes.txt").write_text("untracked: not a change of the commit's files")
    assert env.git_state(tmp_path)["changed"] is False
    (tmp_path / "train.ipynb").write_text('{"cells": []}')
    assert env.git_state(tmp_path)["changed"] is True


def test_a_repository_others_may_change_gives_its_commit_and_runs_none_of_its_commands(tmp_path):
    """A folder on shared storage: a group may write the repository's config, where a clean filter is a command
    git runs as whoever asks for its status.  Its commit is recorded, whether files changed is not asked."""
    git = ["git", "-C", str(tmp_path), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / ".gitattributes").write_text("*.txt filter=planted\n")
    (tmp_path / "f.txt").write_text("one\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    planted = tmp_path / "PLANTED"
    subprocess.run([*git, "config", "filter.planted.clean", f"touch {planted}; cat"], check=True)
    (tmp_path / "f.txt").write_text("two\n")
    assert env.git_state(tmp_path)["changed"] is True and planted.exists()  # the user's own repository: theirs
    planted.unlink()
    (tmp_path / ".git" / "config").chmod(0o664)  # the group may change it
    (tmp_path / "f.txt").write_text("three\n")
    found = env.git_state(tmp_path)
    assert found["changed"] is None and len(found["commit"]) == 40
    assert not planted.exists()


def test_the_environment_names_the_portal_from_its_packages():
    facts = env.environment(
        job_id="42",
        kind="session",
        nodes="node001",
        python="/home/alice/.local/share/dsportal/python3.11/bin/python",
        found=(["dsportal==0.2.0", "torch==2.5.1"], ""),
        modules=["cuda/12.4"],
        kernels=[{"name": "python3"}],
        git=None,
        written=1764400000.4,
    )
    assert facts == {
        "job_id": "42",
        "written": 1764400000,
        "kind": "session",
        "nodes": "node001",
        "portal": "0.2.0",
        "python": "/home/alice/.local/share/dsportal/python3.11/bin/python",
        "packages": ["dsportal==0.2.0", "torch==2.5.1"],
        "modules": ["cuda/12.4"],
        "kernels": [{"name": "python3"}],
        "git": None,
    }
    cut = env.environment(
        job_id="42", kind="run", nodes="", python="p", found=([], "why"), modules=[], kernels=[], git=None, written=0
    )
    assert (cut["portal"], cut["notes"]) == ("", ["why"])


def test_a_container_kernel_names_its_image_and_the_digest_written_beside_it(tmp_path):
    image = tmp_path / "pytorch-24.10.sif"
    image.write_bytes(b"sif")
    (tmp_path / "pytorch-24.10.sif.digest").write_text("sha256:abc123\n")
    kernels = {"containers": [{"name": "ngc-pytorch", "image": str(image)}, {"name": "gone", "image": "/x.sif"}]}
    offered = env.kernels_offered({"python3": {}, "ngc-pytorch": {}, "ir": {}}, kernels)
    assert offered == [
        {"name": "python3"},
        {"name": "ngc-pytorch", "image": str(image), "digest": "sha256:abc123"},
        {"name": "ir"},
    ]


def test_the_environment_is_written_whole_private_and_within_what_the_hub_reads(tmp_path):
    facts = env.environment(
        job_id="7_3",
        kind="sweep",
        nodes="node001",
        python="p",
        found=([f"package-with-a-long-name-{i:05d}==1.0.0" for i in range(20000)], ""),
        modules=[],
        kernels=[],
        git=None,
        written=0,
    )
    path = env.write(tmp_path, "7_3", facts)
    assert (
        path == Path(receipt_environment(str(tmp_path), "7_3")) == tmp_path / ".dsportal/receipts/7_3.environment.json"
    )
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.stat().st_size <= RECEIPT_ENVIRONMENT_BYTES
    written = json.loads(path.read_text())
    assert 0 < len(written["packages"]) < 20000 and written["notes"] == ["the package list was cut to fit the receipt"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
